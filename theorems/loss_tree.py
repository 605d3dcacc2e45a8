"""The syntax check of a loss text before sympy sees it (`theorems.loss_parse`; docs/theory.md
section 5.1): only the allowed node types, names and functions, literals of bounded size, no
non-real constants; the size limits and the one-line refusal."""

from __future__ import annotations

import ast
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from certify.errors import MdcertError

__all__ = [
    "CONSTANTS",
    "LIMITS",
    "LOSS_FUNCS",
    "NOT_REAL",
    "OPS",
    "U_BITS",
    "check_tree",
    "const_int",
    "literal_bits",
    "loss_refusal",
]


#: functions a loss expression may call (sympy names); anything else is refused before sympy sees it
LOSS_FUNCS = frozenset(
    {
        "exp",
        "log",
        "ln",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "sinh",
        "cosh",
        "tanh",
        "asin",
        "acos",
        "atan",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "floor",
        "ceiling",
        "frac",
        "sign",
        "Abs",
        "abs",
        "Max",
        "Min",
        "Heaviside",
        "Piecewise",
    }
)


#: the bounds on a loss expression (documented in docs/formats.md and the error messages)
LIMITS = {
    "chars": 500,  # characters of the text
    "nodes": 300,  # nodes of the Python syntax tree (sympy tree: 10x)
    "depth": 24,  # nesting depth of the syntax tree
    "calls": 6,  # functions nested inside functions
    "exponent": 1000,  # |constant exponent|
    "bits": 10000,  # bit size of any number the expression can create (about 3000 digits)
}


CONSTANTS = {"E", "pi"}


NOT_REAL = {
    "I": "the imaginary unit I",
    "oo": "infinity oo",
    "zoo": "complex infinity zoo",
    "nan": "nan",
    "S": "sympy's S",
    "N": "sympy's N",
}


OPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.USub,
    ast.UAdd,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
)


#: bit size used for ``u`` in the size bound (witness points are small integers and halves)
U_BITS = 4


def loss_refusal(loss: Any, what: str) -> MdcertError:
    return MdcertError(
        f"loss {str(loss)[:80]!r}: {what} is not allowed; a loss is a real function of the real "
        f"variable u, written with numbers, E, pi, + - * / ** and functions such as exp, log, sqrt, "
        f"Max, Abs, Piecewise (e.g. 'log(1 + exp(-u))')"
    )


def literal_bits(node: ast.Constant, text: str) -> int:
    """Bit size of the exact rational a numeric literal becomes (floats from their decimal text)."""
    value = node.value
    if isinstance(value, int):
        return abs(value).bit_length()
    src = ast.get_source_segment(text, node) or repr(value)
    try:
        q = Fraction(Decimal(src.replace("_", "")))
    except (InvalidOperation, ValueError, OverflowError):
        return LIMITS["bits"] + 1
    return q.numerator.bit_length() + q.denominator.bit_length()


def check_tree(tree: ast.Expression, text: str, loss: Any) -> None:
    """One bottom-up pass: allowed nodes, size, depth, call nesting, towers and the bit bound."""
    nodes = list(ast.walk(tree))
    if len(nodes) > LIMITS["nodes"]:
        raise MdcertError(
            f"loss {str(loss)[:80]!r} is too large ({len(nodes)} syntax nodes, at most "
            f"{LIMITS['nodes']}); simplify the expression"
        )
    allowed = (
        ast.Constant,
        ast.Name,
        ast.BinOp,
        ast.UnaryOp,
        ast.Compare,
        ast.Call,
        ast.Tuple,
        ast.Load,
        ast.keyword,
        ast.operator,
        ast.unaryop,
        ast.cmpop,
    )  # operators get a precise message below
    funcs = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for node in nodes[1:]:  # top-down first, so that the message names the outermost offender
        if not isinstance(node, allowed) and id(node) not in funcs:
            raise loss_refusal(loss, type(node).__name__)
    # iterative post-order: (depth, call nesting, bits, constant-only, has a power) per node
    info: dict[int, tuple[int, int, int, bool, bool]] = {}
    stack: list[tuple[ast.AST, bool]] = [(tree.body, False)]
    while stack:
        node, seen = stack.pop()
        children = [c for c in ast.iter_child_nodes(node) if id(c) not in funcs]
        if not seen:
            stack.append((node, True))
            stack.extend((c, False) for c in children)
            continue
        kids = [info[id(c)] for c in children if id(c) in info]
        depth = 1 + max((k[0] for k in kids), default=0)
        calls = max((k[1] for k in kids), default=0)
        const = all(k[3] for k in kids)
        has_pow = any(k[4] for k in kids)
        bits = max((k[2] for k in kids), default=0)
        if isinstance(node, ast.Constant):
            if node.value is True:  # Piecewise((expr, True))
                bits, const = 0, True
            elif isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise loss_refusal(loss, f"constant {node.value!r}")
            else:
                bits, const = literal_bits(node, text), True
        elif isinstance(node, ast.Name):
            if node.id == "u":
                bits, const = U_BITS, False
            elif node.id in CONSTANTS:
                bits, const = 2, True
            elif node.id in NOT_REAL:
                raise loss_refusal(loss, f"the name {node.id!r} ({NOT_REAL[node.id]})")
            elif node.id in LOSS_FUNCS or id(node) in funcs:
                pass  # a function name, checked at its Call
            else:
                raise loss_refusal(
                    loss, f"the name {node.id!r} (the only variable is u; constants: E, pi)"
                )
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, OPS):
                raise loss_refusal(
                    loss,
                    f"operator {type(node.op).__name__}"
                    + (" (write powers as **)" if isinstance(node.op, ast.BitXor) else ""),
                )
            left, right = info[id(node.left)], info[id(node.right)]
            if isinstance(node.op, ast.Pow):
                if right[4]:
                    raise loss_refusal(loss, "a tower of powers (a power in an exponent)")
                if right[3]:
                    exps = [
                        n.value
                        for n in ast.walk(node.right)
                        if isinstance(n, ast.Constant)
                        and isinstance(n.value, (int, float))
                        and not isinstance(n.value, bool)
                    ]
                    if any(abs(c) > LIMITS["exponent"] for c in exps):
                        raise loss_refusal(loss, f"a constant exponent above {LIMITS['exponent']}")
                    e = const_int(node.right)
                    bits = left[2] * (abs(e) if e is not None else 1) + right[2]
                else:
                    bits = left[2] + right[2]
                has_pow = True
            else:
                bits = left[2] + right[2] + 1
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, OPS):
                raise loss_refusal(loss, f"operator {type(node.op).__name__}")
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, OPS) for op in node.ops):
                raise loss_refusal(loss, "this comparison")
            bits = sum(k[2] for k in kids) + 1
        elif isinstance(node, ast.Call):
            if (
                not isinstance(node.func, ast.Name)
                or node.func.id not in LOSS_FUNCS
                or node.keywords
            ):
                raise loss_refusal(loss, "function call " + repr(ast.unparse(node.func)[:40]))
            calls = 1 + max((info[id(a)][1] for a in node.args), default=0)
            bits = sum(info[id(a)][2] for a in node.args) + 1
            if node.func.id in ("exp", "sinh", "cosh"):  # exponentials count as powers (no towers)
                has_pow = has_pow or not const
        elif isinstance(node, ast.Tuple):
            bits = sum(k[2] for k in kids)
        elif isinstance(node, (ast.operator, ast.unaryop, ast.cmpop, ast.keyword, ast.Load)):
            pass  # judged at their BinOp / UnaryOp / Compare / Call
        else:
            raise loss_refusal(loss, type(node).__name__)
        if depth > LIMITS["depth"]:
            raise MdcertError(
                f"loss {str(loss)[:80]!r} is nested too deeply (more than {LIMITS['depth']} levels); "
                f"simplify the expression"
            )
        if calls > LIMITS["calls"]:
            raise MdcertError(
                f"loss {str(loss)[:80]!r} nests functions more than {LIMITS['calls']} deep; "
                f"simplify the expression"
            )
        if bits > LIMITS["bits"]:
            raise MdcertError(
                f"loss {str(loss)[:80]!r} creates numbers too large to reason about exactly "
                f"(more than {LIMITS['bits']} bits); use smaller constants and exponents"
            )
        info[id(node)] = (depth, calls, bits, const, has_pow)


def const_int(node: ast.AST) -> int | None:
    """The value of an integer literal exponent (with unary signs), else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return sign * node.value
    return None
