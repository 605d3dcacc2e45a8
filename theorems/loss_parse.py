"""Parsing a loss expression into a bounded, exact sympy expression in the real symbol ``u`` (docs/theory.md section 5.1).

Untrusted text is checked with Python's ``ast`` *before* sympy sees it (sympy's parser evaluates Python
code and its algebra can run for hours on small inputs): only arithmetic, comparisons, the real
variable ``u``, the real constants ``E`` and ``pi``, numbers and whitelisted functions are allowed, and
the tree is bounded in size, depth, function nesting, power towers and the bit size of every number
it can create. Decimal numbers become exact rationals ("0.1" is 1/10). A sympy expression given
through the Python API goes through the same bounds on its own tree. The text is parsed *without*
sympy's automatic evaluation (``u/u`` stays ``u/u``), so that the domain of the expression as
written can be examined (`theorems.domain`); `parse_written` returns both forms.
"""

from __future__ import annotations

import ast
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from certify.errors import MdcertError

__all__ = ["NAMED_LOSSES", "LOSS_FUNCS", "LIMITS", "parse_loss", "parse_written", "check_expr_bounds"]

NAMED_LOSSES: dict[str, str] = {
    "logistic": "log(1 + exp(-u))",
    "exponential": "exp(-u)",
    "linear": "-u",
    "linear-decreasing": "-u",
    "hinge": "Max(0, 1 - u)",
    "squared": "(1 - u)**2",
}

#: functions a loss expression may call (sympy names); anything else is refused before sympy sees it
LOSS_FUNCS = frozenset({"exp", "log", "ln", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
                        "atan", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceiling", "frac", "sign", "Abs",
                        "abs", "Max", "Min", "Heaviside", "Piecewise"})

#: the bounds on a loss expression (documented in docs/formats.md and the error messages)
LIMITS = {
    "chars": 500,           # characters of the text
    "nodes": 300,           # nodes of the Python syntax tree (sympy tree: 10x)
    "depth": 24,            # nesting depth of the syntax tree
    "calls": 6,             # functions nested inside functions
    "exponent": 1000,       # |constant exponent|
    "bits": 10000,          # bit size of any number the expression can create (about 3000 digits)
}

_CONSTANTS = {"E", "pi"}
_NOT_REAL = {"I": "the imaginary unit I", "oo": "infinity oo", "zoo": "complex infinity zoo", "nan": "nan",
             "S": "sympy's S", "N": "sympy's N"}
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: bit size used for ``u`` in the size bound (witness points are small integers and halves)
_U_BITS = 4


def _refuse(loss: Any, what: str) -> MdcertError:
    return MdcertError(f"loss {str(loss)[:80]!r}: {what} is not allowed; a loss is a real function of the real "
                       f"variable u, written with numbers, E, pi, + - * / ** and functions such as exp, log, sqrt, "
                       f"Max, Abs, Piecewise (e.g. 'log(1 + exp(-u))')")


def _literal_bits(node: ast.Constant, text: str) -> int:
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


def _check_tree(tree: ast.Expression, text: str, loss: Any) -> None:
    """One bottom-up pass: allowed nodes, size, depth, call nesting, towers and the bit bound."""
    nodes = list(ast.walk(tree))
    if len(nodes) > LIMITS["nodes"]:
        raise MdcertError(f"loss {str(loss)[:80]!r} is too large ({len(nodes)} syntax nodes, at most "
                          f"{LIMITS['nodes']}); simplify the expression")
    allowed = (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Tuple, ast.Load, ast.keyword,
               ast.operator, ast.unaryop, ast.cmpop)  # operators get a precise message below
    funcs = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for node in nodes[1:]:  # top-down first, so that the message names the outermost offender
        if not isinstance(node, allowed) and id(node) not in funcs:
            raise _refuse(loss, type(node).__name__)
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
            if node.value is True:            # Piecewise((expr, True))
                bits, const = 0, True
            elif isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise _refuse(loss, f"constant {node.value!r}")
            else:
                bits, const = _literal_bits(node, text), True
        elif isinstance(node, ast.Name):
            if node.id == "u":
                bits, const = _U_BITS, False
            elif node.id in _CONSTANTS:
                bits, const = 2, True
            elif node.id in _NOT_REAL:
                raise _refuse(loss, f"the name {node.id!r} ({_NOT_REAL[node.id]})")
            elif node.id in LOSS_FUNCS or id(node) in funcs:
                pass                          # a function name, checked at its Call
            else:
                raise _refuse(loss, f"the name {node.id!r} (the only variable is u; constants: E, pi)")
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, _OPS):
                raise _refuse(loss, f"operator {type(node.op).__name__}"
                              + (" (write powers as **)" if isinstance(node.op, ast.BitXor) else ""))
            left, right = info[id(node.left)], info[id(node.right)]
            if isinstance(node.op, ast.Pow):
                if right[4]:
                    raise _refuse(loss, "a tower of powers (a power in an exponent)")
                if right[3]:
                    exps = [n.value for n in ast.walk(node.right) if isinstance(n, ast.Constant)
                            and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]
                    if any(abs(c) > LIMITS["exponent"] for c in exps):
                        raise _refuse(loss, f"a constant exponent above {LIMITS['exponent']}")
                    e = _const_int(node.right)
                    bits = left[2] * (abs(e) if e is not None else 1) + right[2]
                else:
                    bits = left[2] + right[2]
                has_pow = True
            else:
                bits = left[2] + right[2] + 1
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, _OPS):
                raise _refuse(loss, f"operator {type(node.op).__name__}")
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, _OPS) for op in node.ops):
                raise _refuse(loss, "this comparison")
            bits = sum(k[2] for k in kids) + 1
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in LOSS_FUNCS or node.keywords:
                raise _refuse(loss, "function call " + repr(ast.unparse(node.func)[:40]))
            calls = 1 + max((info[id(a)][1] for a in node.args), default=0)
            bits = sum(info[id(a)][2] for a in node.args) + 1
            if node.func.id in ("exp", "sinh", "cosh"):   # exponentials count as powers (no towers)
                has_pow = has_pow or not const
        elif isinstance(node, ast.Tuple):
            bits = sum(k[2] for k in kids)
        elif isinstance(node, (ast.operator, ast.unaryop, ast.cmpop, ast.keyword, ast.Load)):
            pass                              # judged at their BinOp / UnaryOp / Compare / Call
        else:
            raise _refuse(loss, type(node).__name__)
        if depth > LIMITS["depth"]:
            raise MdcertError(f"loss {str(loss)[:80]!r} is nested too deeply (more than {LIMITS['depth']} levels); "
                              f"simplify the expression")
        if calls > LIMITS["calls"]:
            raise MdcertError(f"loss {str(loss)[:80]!r} nests functions more than {LIMITS['calls']} deep; "
                              f"simplify the expression")
        if bits > LIMITS["bits"]:
            raise MdcertError(f"loss {str(loss)[:80]!r} creates numbers too large to reason about exactly "
                              f"(more than {LIMITS['bits']} bits); use smaller constants and exponents")
        info[id(node)] = (depth, calls, bits, const, has_pow)


def _const_int(node: ast.AST) -> int | None:
    """The value of an integer literal exponent (with unary signs), else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return sign * node.value
    return None


def check_expr_bounds(expr, loss: Any) -> None:
    """The same bounds on a sympy tree (API input, or the parsed text): size, depth, numbers' bit size,
    no infinities, nan or non-real number atoms."""
    import sympy as sp

    count, stack = 0, [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > 10 * LIMITS["nodes"]:
            raise MdcertError(f"loss {str(loss)[:80]!r} is too large (more than {10 * LIMITS['nodes']} sympy nodes); "
                              f"simplify the expression")
        if depth > 2 * LIMITS["depth"]:
            raise MdcertError(f"loss {str(loss)[:80]!r} is nested too deeply (more than {2 * LIMITS['depth']} "
                              f"sympy levels); simplify the expression")
        if node.is_Number:
            if not node.is_finite or node is sp.nan or not node.is_real:
                raise _refuse(loss, f"the number {node}")
            if node.is_Rational and node.p.bit_length() + node.q.bit_length() > LIMITS["bits"]:
                raise MdcertError(f"loss {str(loss)[:80]!r} holds a number too large to reason about exactly "
                                  f"(more than {LIMITS['bits']} bits); use smaller constants")
        elif node in (sp.I, sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise _refuse(loss, f"the constant {node}")
        stack.extend((a, depth + 1) for a in node.args if isinstance(a, sp.Basic))


def parse_written(loss: Any):
    """``(written, simplified, u)``: the loss as written (sympy tree built without automatic evaluation)
    and sympy's simplified form of it (docs/theory.md section 5.1).

    Raises:
        MdcertError: one line saying what is not allowed and how to write the loss instead.
    """
    import sympy as sp

    from theorems.domain import evaluated

    u = sp.Symbol("u", real=True)
    if isinstance(loss, sp.Basic):
        if not isinstance(loss, sp.Expr):
            raise MdcertError(f"loss {str(loss)[:80]!r} is not an expression in u")
        check_expr_bounds(loss, loss)
        with sp.evaluate(False):   # examine the tree that was given, not a re-simplified one
            expr = loss.xreplace({s: u for s in loss.free_symbols if getattr(s, "name", None) == "u"})
            floats = expr.atoms(sp.Float)
            if floats:  # binary floats are exact rationals: reason about the value that was given
                expr = expr.xreplace({f: sp.Rational(f) for f in floats})
        if floats:
            check_expr_bounds(expr, loss)
    else:
        if not isinstance(loss, str) or not loss.strip():
            raise MdcertError(f"invalid loss {loss!r}; give a name ({', '.join(NAMED_LOSSES)}) or an expression in u")
        text = NAMED_LOSSES.get(loss.strip().lower(), loss).strip()
        if len(text) > LIMITS["chars"]:
            raise MdcertError(f"loss expression is too long ({len(text)} characters, at most {LIMITS['chars']})")
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise MdcertError(f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'") from None
        _check_tree(tree, text, loss)
        try:
            from sympy.parsing.sympy_parser import parse_expr, rationalize, standard_transformations

            unevaluated = {name: (lambda f: lambda *a: f(*a, evaluate=False))(f)
                           for name, f in (("Max", sp.Max), ("Min", sp.Min), ("Piecewise", sp.Piecewise))}
            with sp.evaluate(False):
                expr = parse_expr(text, local_dict={"u": u, "Abs": sp.Abs, "E": sp.E, "pi": sp.pi, **unevaluated},
                                  transformations=standard_transformations + (rationalize,), evaluate=False)
        except Exception:  # sympy raises many types on garbage (TypeError for comparisons with non-reals, ...)
            raise MdcertError(f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'") from None
        if isinstance(expr, sp.Basic):
            check_expr_bounds(expr, loss)
    if not isinstance(expr, sp.Expr):
        raise MdcertError(f"loss {str(loss)[:80]!r} is not an expression in u")
    extra = sorted(str(s) for s in expr.free_symbols if s != u)
    if extra:
        raise MdcertError(f"loss {str(loss)[:80]!r} has free symbols {extra}; the only variable allowed is u")
    try:
        simple = evaluated(expr)
    except MdcertError:
        raise
    except Exception:  # sympy raises many types while evaluating garbage
        raise MdcertError(f"cannot evaluate loss expression {str(loss)[:80]!r}; write it in u, "
                          f"e.g. 'log(1 + exp(-u))'") from None
    check_expr_bounds(simple, loss)
    if not isinstance(simple, sp.Expr):
        raise MdcertError(f"loss {str(loss)[:80]!r} is not an expression in u")
    return expr, simple, u


def parse_loss(loss: Any):
    """A bounded, exact sympy expression in the real symbol ``u`` (sympy's simplified form; the loss
    check itself examines the written form, `parse_written`).

    Raises:
        MdcertError: one line saying what is not allowed and how to write the loss instead.
    """
    _, simple, u = parse_written(loss)
    return simple, u
