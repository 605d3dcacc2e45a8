"""The decoder-radius coupling ``r = f(R)`` of the joint regularization path (docs/theory.md section 5, Theorem 31).

An arithmetic expression in R is parsed with Python's ``ast`` into a whitelisted tree (numbers, R,
pi, e, + - * / ** or ^, and sqrt/log/ln/exp/log2/log10/abs) and evaluated by a small interpreter,
never by ``eval``; anything else, and any non-real, non-finite or non-positive value, is a one-line
MdcertError.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Callable, Sequence

from certify.errors import MdcertError

__all__ = ["RadiusFunction", "parse_radius_function"]

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Callable[[float], float]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "ln": math.log,
    "exp": math.exp,
    "log2": math.log2,
    "log10": math.log10,
    "abs": abs,
}
_CONSTS = {"pi": math.pi, "e": math.e}


@dataclass(frozen=True)
class RadiusFunction:
    """A decoder radius ``r = f(R)`` parsed from a whitelisted arithmetic expression.

    Attributes:
        text: the expression as given.
    """

    text: str
    tree: ast.AST

    def __call__(self, R: float) -> float:
        try:
            value = _eval(self.tree.body, float(R))
        except (ArithmeticError, ValueError) as exc:
            raise MdcertError(
                f"r(R) = {self.text!r} cannot be evaluated at R = {R:g} ({exc})"
            ) from None
        if not isinstance(value, float):
            raise MdcertError(
                f"r(R) = {self.text!r} is not real at R = {R:g} (e.g. a negative number to a "
                f"fractional power)"
            )
        if not math.isfinite(value) or value <= 0:
            raise MdcertError(
                f"r(R) = {self.text!r} gives {value!r} at R = {R:g}; the decoder radius must be finite and positive"
            )
        return value

    def values(self, radii: Sequence[float]) -> list[float]:
        return [self(R) for R in radii]


def _eval(node: ast.AST, R: float):
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id == "R":
            return R
        return _CONSTS[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, R), _eval(node.right, R)
        if isinstance(node.op, ast.Pow) and abs(b) > 1e3:
            raise OverflowError("exponent too large")
        if not (isinstance(a, float) and isinstance(b, float)):
            return complex("nan")  # propagate "not real"
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, R))
    if isinstance(node, ast.Call):
        arg = _eval(node.args[0], R)
        if not isinstance(arg, float):
            return complex("nan")
        return float(_FUNCS[node.func.id](arg))
    raise ValueError("unsupported expression")  # pragma: no cover - rejected by _check


def _check(node: ast.AST, text: str) -> None:
    bad = None
    if isinstance(node, ast.Expression):
        return _check(node.body, text)
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
            bad = f"constant {node.value!r}"
    elif isinstance(node, ast.Name):
        if node.id != "R" and node.id not in _CONSTS:
            bad = f"name {node.id!r} (only R, pi, e)"
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            bad = f"operator {type(node.op).__name__}"
        else:
            _check(node.left, text)
            _check(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            bad = f"operator {type(node.op).__name__}"
        else:
            _check(node.operand, text)
    elif isinstance(node, ast.Call):
        if (
            not isinstance(node.func, ast.Name)
            or node.func.id not in _FUNCS
            or len(node.args) != 1
            or node.keywords
        ):
            bad = "function call (allowed: " + ", ".join(sorted(_FUNCS)) + ", one argument each)"
        else:
            _check(node.args[0], text)
    else:
        bad = type(node).__name__
    if bad:
        raise MdcertError(
            f"invalid --r-of-R {text!r}: {bad} is not allowed; use an arithmetic expression in R, "
            f"e.g. 'R', 'sqrt(R)', '2*log(R)+1'"
        )


def parse_radius_function(text: str) -> RadiusFunction:
    """Parse ``r = f(R)`` safely: numbers, R, pi, e, + - * / ** (or ^), and sqrt/log/ln/exp/log2/log10/abs.

    Raises:
        MdcertError: empty, too long, malformed, or containing anything else.
    """
    if not isinstance(text, str) or not text.strip():
        raise MdcertError(
            "empty --r-of-R; give the decoder radius as an expression in R, e.g. 'R' or 'sqrt(R)'"
        )
    if len(text) > 200:
        raise MdcertError("--r-of-R is too long (over 200 characters)")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")  # '^' is power, as in math
    except SyntaxError:
        raise MdcertError(
            f"invalid --r-of-R {text!r}: not an arithmetic expression in R (e.g. 'R', 'sqrt(R)')"
        ) from None
    _check(tree, text)
    return RadiusFunction(text.strip(), tree)
