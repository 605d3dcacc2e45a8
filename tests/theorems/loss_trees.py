"""Generated loss expressions with domain traps, and an independent oracle for the loss check's HOLDS.

`random_loss(pick)` writes an expression tree as text: logs, roots, negative and fractional powers,
divisions, special functions with restricted domains, Piecewise with gaps, and cancellations that
sympy's automatic evaluation removes (``x - x``, ``x/x``, ``0*x``, ``x**0``, ``exp(log(x))``,
``sqrt(x)**2``). ``pick(options)`` chooses one option: hypothesis's ``draw(sampled_from(...))`` in
the tests, ``random.Random.choice`` in ``benchmarks/loss_hunt.py``.

`holds_is_wrong(text)` is the oracle: it never uses sympy or mdcert. It evaluates the text's Python
syntax tree *as written* with mpmath (40 digits; a point found undefined is re-tried at 1000) at
sampled points, and reports why a HOLDS would be wrong: a point where some node is undefined or not
real, a point where l' >= 0 (numerical derivative; a zero is an |l'| below 1e-25 times |l'| at
u +- 0.01), a pair a < b with l(a) < l(b), or a kink (one-sided derivatives that differ). Sampled checks can only refute: ``None`` means "no
evidence against HOLDS", never a proof; and a value that is nonzero only beyond 1000 digits
(``erf(101) - 1``) reads as an undefined division, so every flagged HOLDS is looked at by hand.
"""

from __future__ import annotations

import ast
from typing import Callable, Sequence

import mpmath as mp

__all__ = ["random_loss", "holds_is_wrong", "mp_value", "Undefined", "PINNED_TRAPS", "LEGIT"]

#: the loss expressions of issue 20 that were certified HOLDS although undefined somewhere on R or with l' = 0
PINNED_TRAPS = (
    "-exp(log(u))",
    "-u**2/u",
    "-u*(u/u)",
    "-u + 0*log(u)",
    "-u + log(u) - log(u)",
    "-sqrt(u)**2",
    "-u + sin(u)/u - sin(u)/u",
    "-u + (u - u)/u",
    "-u + log(u)**0 - 1",
    "-u + u/u",
    "exp(-u)*exp(log(1/u))*u",
    "-u + exp(log(u)) - u",
    "-u + log(u**2 + 1)",
    "-u - log(u**2 + 1)",
    "Piecewise((-u, u < 0), (-2*u, u > 0))",
    "Piecewise((-u, u < 1), (-u, u > 2))",
)
#: losses that satisfy the assumption (the check must not lose them)
LEGIT = (
    "log(1 + exp(-u))",
    "exp(-u)",
    "-u",
    "2 - 3*u",
    "1/(1 + exp(u))",
    "-u**3 - u",
    "erfc(u)",
    "-atan(u) - u",
    "-u + 0*exp(u)",
    "-u + exp(u)/exp(u) - 1",
    "-u + sqrt(u**2 + 1)**2 - u**2 - 1",
    "-u + log(exp(u)) - u",
)

_LEAVES = (
    "u",
    "u",
    "u",
    "1",
    "2",
    "1/2",
    "-1",
    "0",
    "u - 1",
    "u + 2",
    "2 - u",
    "u**2",
    "u**2 + 1",
    "1 + exp(u)",
)
_SAFE = ("exp", "sin", "cos", "atan", "erf", "erfc", "tanh", "sinh", "asinh", "Abs")
_TRAP = ("log", "sqrt", "tan", "asin", "acos", "acosh", "atanh")
_BINARY = (
    "({A}) + ({B})",
    "({A}) - ({B})",
    "({A})*({B})",
    "({A})/({B})",
    "({A})**2",
    "({A})**3",
    "({A})**(-1)",
    "({A})**(1/2)",
    "({A})**(1/3)",
    "({A})**(-1/2)",
    "({A})**0",
    "2**({A})",
    "Max({A}, {B})",
    "Min({A}, {B})",
)
_CANCEL = (
    "({A}) - ({A})",
    "({A})/({A})",
    "0*({A})",
    "({A})**0",
    "exp(log({A}))",
    "sqrt({A})**2",
    "({B}) + ({A}) - ({A})",
    "({B})*(({A})/({A}))",
    "log({A}) - log({A})",
    "({A})*({B})/({A})",
    "({B}) + 0*log({A})",
    "sin({A})/({A}) - sin({A})/({A})",
    "({B}) + (({A}) - ({A}))/({A})",
)
_PIECE = (
    "Piecewise(({A}, u < {a}), ({B}, u > {b}))",
    "Piecewise(({A}, u < {a}), ({B}, u >= {b}))",
    "Piecewise(({A}, u <= {a}), ({B}, True))",
)
_TOP = (
    "-u + {c}*({T})",
    "-2*u + {c}*({T})",
    "exp(-u) + {c}*({T})",
    "log(1 + exp(-u)) + {c}*({T})",
    "-u + ({T})",
    "{T}",
    "-u - ({T})",
)
_COEF = ("0", "0", "1", "1/10", "-1/10", "1/100")


def _tree(pick: Callable[[Sequence], object], depth: int) -> str:
    kind = pick(("leaf", "safe", "trap", "binary", "cancel", "piece") if depth > 0 else ("leaf",))
    if kind == "leaf":
        return pick(_LEAVES)
    a = _tree(pick, depth - 1)
    if kind == "safe":
        return f"{pick(_SAFE)}({a})"
    if kind == "trap":
        return f"{pick(_TRAP)}({a})"
    b = _tree(pick, depth - 1)
    if kind == "piece":
        return pick(_PIECE).format(A=a, B=b, a=pick(("0", "1", "-1")), b=pick(("0", "1", "2")))
    return pick(_BINARY if kind == "binary" else _CANCEL).format(A=a, B=b)


def random_loss(pick: Callable[[Sequence], object], *, depth: int = 3) -> str:
    """One generated loss expression (text) with domain traps and cancellations."""
    return pick(_TOP).format(c=pick(_COEF), T=_tree(pick, pick(tuple(range(1, depth + 1)))))


# ------------------------------------------------------------------------------------------ the oracle
class Undefined(Exception):
    """The expression as written is undefined or not real at a point."""


def _real(v, what: str):
    if isinstance(v, mp.mpc):
        if v.imag != 0:
            raise Undefined(f"{what} is not real")
        v = v.real
    if not mp.isfinite(v):
        raise Undefined(f"{what} is not finite")
    return v


_FUNCS = {
    "exp": mp.exp,
    "sin": mp.sin,
    "cos": mp.cos,
    "tan": mp.tan,
    "atan": mp.atan,
    "erf": mp.erf,
    "erfc": mp.erfc,
    "tanh": mp.tanh,
    "sinh": mp.sinh,
    "cosh": mp.cosh,
    "asinh": mp.asinh,
    "sqrt": mp.sqrt,
    "asin": mp.asin,
    "acos": mp.acos,
    "acosh": mp.acosh,
    "atanh": mp.atanh,
    "Abs": abs,
    "abs": abs,
    "floor": mp.floor,
    "ceiling": mp.ceil,
    "sign": mp.sign,
    "frac": lambda x: x - mp.floor(x),
    "Heaviside": lambda x: mp.mpf(1) / 2 if x == 0 else mp.mpf(x > 0),
}


def _ev(node: ast.AST, x):
    if isinstance(node, ast.Expression):
        return _ev(node.body, x)
    if isinstance(node, ast.Constant):
        return mp.mpf(node.value) if not isinstance(node.value, float) else mp.mpf(repr(node.value))
    if isinstance(node, ast.Name):
        return {"u": x, "E": mp.e, "pi": mp.pi}[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _ev(node.operand, x)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _ev(node.left, x), _ev(node.right, x)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Div):
            if b == 0:
                raise Undefined("division by zero")
            return a / b
        if a == 0 and b < 0:
            raise Undefined("0 to a negative power")
        return _real(mp.power(a, b), "a power")
    if isinstance(node, ast.Call):
        name = node.func.id
        if name == "Piecewise":
            for pair in node.args:
                expr, cond = pair.elts
                if _cond(cond, x):
                    return _ev(expr, x)
            raise Undefined("no piece applies")
        args = [_ev(a, x) for a in node.args]
        if name in ("log", "ln"):
            if args[0] == 0:
                raise Undefined("log of 0")
            v = mp.log(args[0]) if len(args) == 1 else mp.log(args[0]) / mp.log(args[1])
        elif name in ("Max", "Min"):
            v = max(args) if name == "Max" else min(args)
        elif name == "tan" and mp.cos(args[0]) == 0:
            raise Undefined("tan at a pole")
        else:
            v = _FUNCS[name](*args)
        return _real(v, name)
    raise ValueError(f"oracle: unsupported syntax {type(node).__name__}")


def _cond(node: ast.AST, x) -> bool:
    if isinstance(node, ast.Constant):
        return bool(node.value)
    a, b = _ev(node.left, x), _ev(node.comparators[0], x)
    op = node.ops[0]
    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}[type(op)]


def mp_value(text: str, x):
    """l(x) evaluated as written with mpmath; raises `Undefined`."""
    with mp.workdps(40):
        return _ev(ast.parse(text, mode="eval"), mp.mpf(x))


#: sample points: quarters in [-10, 10] and a few irrational-looking points
_POINTS = [mp.mpf(k) / 4 for k in range(-40, 41)] + [
    mp.mpf("0.1234567"),
    mp.mpf("-0.7654321"),
    mp.mpf("3.3333"),
]
_DERIV_POINTS = [mp.mpf(k) / 2 for k in range(-12, 13)]


def _defined_at_high_precision(tree: ast.AST, x) -> bool:
    """A 40-digit zero divisor or log argument may be a tiny nonzero number: retry at 1000 digits."""
    with mp.workdps(1000):
        try:
            _ev(tree, mp.mpf(x))
        except Undefined:
            return False
    return True


def holds_is_wrong(text: str) -> str | None:
    """Why a HOLDS for ``text`` would be wrong (sampled evidence), or None when no evidence is found."""
    tree = ast.parse(text, mode="eval")
    with mp.workdps(40):
        f = lambda t: _ev(tree, t)  # noqa: E731
        values = []
        for x in _POINTS:
            try:
                values.append((x, f(x)))
            except Undefined as exc:
                if _defined_at_high_precision(
                    tree, x
                ):  # e.g. erf(101) - 1 is 0 to 40 digits, not 0
                    continue
                return f"undefined at u = {mp.nstr(x, 8)}: {exc}"
        for (a, la), (b, lb) in zip(values, values[1:]):
            if a < b and la < lb:
                return f"l({mp.nstr(a, 8)}) < l({mp.nstr(b, 8)})"
        for x in _DERIV_POINTS:
            try:
                left = mp.diff(f, x, direction=-1, h=mp.mpf("1e-12"))
                right = mp.diff(f, x, direction=1, h=mp.mpf("1e-12"))
                mid = mp.diff(f, x)
            except Undefined as exc:
                return f"undefined near u = {mp.nstr(x, 8)}: {exc}"
            if abs(left - right) > mp.mpf("1e-6") * (1 + abs(mid)):
                return f"kink at u = {mp.nstr(x, 8)}: one-sided derivatives {mp.nstr(left, 6)}, {mp.nstr(right, 6)}"
            try:
                near = min(abs(mp.diff(f, x - mp.mpf("0.01"))), abs(mp.diff(f, x + mp.mpf("0.01"))))
            except Undefined as exc:
                return f"undefined near u = {mp.nstr(x, 8)}: {exc}"
            # an exact zero of l' comes out ~1e-88 at 40 digits, far below l' 0.01 away on both sides;
            # a tiny but genuine l' (erfc(1 + e^u) has l'(2.5) = -4.6e-75) is not
            if mid >= 0 or abs(mid) <= mp.mpf("1e-25") * near:
                return f"l'({mp.nstr(x, 8)}) = {mp.nstr(mid, 6)}: zero or positive"
    return None
