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
from typing import Any

from certify.errors import MdcertError
from theorems.loss_tree import LIMITS, LOSS_FUNCS, check_tree, loss_refusal

__all__ = [
    "NAMED_LOSSES",
    "LOSS_FUNCS",
    "LIMITS",
    "parse_loss",
    "parse_written",
    "check_expr_bounds",
]

NAMED_LOSSES: dict[str, str] = {
    "logistic": "log(1 + exp(-u))",
    "exponential": "exp(-u)",
    "linear": "-u",
    "linear-decreasing": "-u",
    "hinge": "Max(0, 1 - u)",
    "squared": "(1 - u)**2",
}


def check_expr_bounds(expr, loss: Any) -> None:
    """The same bounds on a sympy tree (API input, or the parsed text): size, depth, numbers' bit size,
    no infinities, nan or non-real number atoms."""
    import sympy as sp

    count, stack = 0, [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > 10 * LIMITS["nodes"]:
            raise MdcertError(
                f"loss {str(loss)[:80]!r} is too large (more than {10 * LIMITS['nodes']} sympy nodes); "
                f"simplify the expression"
            )
        if depth > 2 * LIMITS["depth"]:
            raise MdcertError(
                f"loss {str(loss)[:80]!r} is nested too deeply (more than {2 * LIMITS['depth']} "
                f"sympy levels); simplify the expression"
            )
        if node.is_Number:
            if not node.is_finite or node is sp.nan or not node.is_real:
                raise loss_refusal(loss, f"the number {node}")
            if node.is_Rational and node.p.bit_length() + node.q.bit_length() > LIMITS["bits"]:
                raise MdcertError(
                    f"loss {str(loss)[:80]!r} holds a number too large to reason about exactly "
                    f"(more than {LIMITS['bits']} bits); use smaller constants"
                )
        elif node in (sp.I, sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise loss_refusal(loss, f"the constant {node}")
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
        with sp.evaluate(False):  # examine the tree that was given, not a re-simplified one
            expr = loss.xreplace(
                {s: u for s in loss.free_symbols if getattr(s, "name", None) == "u"}
            )
            floats = expr.atoms(sp.Float)
            if floats:  # binary floats are exact rationals: reason about the value that was given
                expr = expr.xreplace({f: sp.Rational(f) for f in floats})
        if floats:
            check_expr_bounds(expr, loss)
    else:
        if not isinstance(loss, str) or not loss.strip():
            raise MdcertError(
                f"invalid loss {loss!r}; give a name ({', '.join(NAMED_LOSSES)}) or an expression in u"
            )
        text = NAMED_LOSSES.get(loss.strip().lower(), loss).strip()
        if len(text) > LIMITS["chars"]:
            raise MdcertError(
                f"loss expression is too long ({len(text)} characters, at most {LIMITS['chars']})"
            )
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise MdcertError(
                f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'"
            ) from None
        check_tree(tree, text, loss)
        try:
            from sympy.parsing.sympy_parser import parse_expr, rationalize, standard_transformations

            unevaluated = {
                name: (lambda f: lambda *a: f(*a, evaluate=False))(f)
                for name, f in (("Max", sp.Max), ("Min", sp.Min), ("Piecewise", sp.Piecewise))
            }
            with sp.evaluate(False):
                expr = parse_expr(
                    text,
                    local_dict={"u": u, "Abs": sp.Abs, "E": sp.E, "pi": sp.pi, **unevaluated},
                    transformations=standard_transformations + (rationalize,),
                    evaluate=False,
                )
        except (
            Exception
        ):  # sympy raises many types on garbage (TypeError for comparisons with non-reals, ...)
            raise MdcertError(
                f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'"
            ) from None
        if isinstance(expr, sp.Basic):
            check_expr_bounds(expr, loss)
    if not isinstance(expr, sp.Expr):
        raise MdcertError(f"loss {str(loss)[:80]!r} is not an expression in u")
    extra = sorted(str(s) for s in expr.free_symbols if s != u)
    if extra:
        raise MdcertError(
            f"loss {str(loss)[:80]!r} has free symbols {extra}; the only variable allowed is u"
        )
    try:
        simple = evaluated(expr)
    except MdcertError:
        raise
    except Exception:  # sympy raises many types while evaluating garbage
        raise MdcertError(
            f"cannot evaluate loss expression {str(loss)[:80]!r}; write it in u, "
            f"e.g. 'log(1 + exp(-u))'"
        ) from None
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
