"""``loss_admissible(l)``: the paper's loss assumption, checked symbolically with sympy (docs/theory.md section 5).

The assumption (arXiv:2410.14581, Assumption A): l is strictly decreasing and differentiable, and
l' is bounded and Lipschitz on every closed interval. The check proves or refutes three parts:

* differentiable on R: a FAILS needs a kink where the one-sided derivatives differ (exact limits),
  or a point where l is not defined/continuous;
* l' bounded and Lipschitz on closed intervals: proved when l'' is continuous on all of R
  (then l' is C^1, hence bounded and Lipschitz on compacts); otherwise UNDECIDED unless refuted above;
* strictly decreasing: proved when sympy shows ``l'(u) < 0`` for every real u, or ``l' <= 0`` with
  isolated zeros; refuted by two exact points ``a < b`` with ``l(a) <= l(b)``.

Named losses: logistic ``log(1 + exp(-u))``, exponential ``exp(-u)``, linear ``-u`` (any
``c - b u`` with b > 0 may be given as an expression), hinge ``Max(0, 1 - u)``, squared ``(1 - u)**2``.
User expressions are strings in the variable ``u``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from certify.errors import MdcertError
from theorems.context import Predicate
from theorems.verdict import Evidence, HypothesisReport, Method

__all__ = ["NAMED_LOSSES", "LossAdmissible", "loss_admissible", "parse_loss"]

NAMED_LOSSES: dict[str, str] = {
    "logistic": "log(1 + exp(-u))",
    "exponential": "exp(-u)",
    "linear": "-u",
    "linear-decreasing": "-u",
    "hinge": "Max(0, 1 - u)",
    "squared": "(1 - u)**2",
}


#: functions a loss expression may call (sympy names); anything else is refused before sympy sees it
_LOSS_FUNCS = frozenset({"exp", "log", "ln", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
                         "atan", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceiling", "frac", "sign", "Abs",
                         "abs", "Max", "Min", "Heaviside", "Piecewise"})
_LOSS_MAX_CHARS = 500


def _check_loss_text(text: str, loss: Any) -> None:
    """Refuse anything but arithmetic in names, numbers and whitelisted calls *before* sympy's
    ``parse_expr`` (which evaluates Python code): no attributes, subscripts, lambdas, keywords,
    dunder names, or power towers of constants that would take forever to expand."""
    import ast

    if len(text) > _LOSS_MAX_CHARS:
        raise MdcertError(f"loss expression is too long ({len(text)} characters, at most {_LOSS_MAX_CHARS})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise MdcertError(f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'") from None
    allowed_ops = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd,
                   ast.Lt, ast.LtE, ast.Gt, ast.GtE)

    def refuse(what: str) -> None:
        raise MdcertError(f"loss {str(loss)[:80]!r}: {what} is not allowed; use arithmetic in u and functions "
                          f"such as exp, log, sqrt, Max, Abs, Piecewise (e.g. 'log(1 + exp(-u))')")

    def constant_only(node: ast.AST) -> bool:
        return not any(isinstance(n, ast.Name) and n.id == "u" for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.Tuple)) or isinstance(node, allowed_ops):
            continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                if node.value is not True:  # Piecewise((expr, True)) needs True
                    refuse(f"constant {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                refuse(f"name {node.id!r}")
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, allowed_ops):
                refuse(f"operator {type(node.op).__name__}" + (" (write powers as **)" if isinstance(node.op, ast.BitXor) else ""))
            if isinstance(node.op, ast.Pow) and constant_only(node.right):
                consts = [n.value for n in ast.walk(node.right) if isinstance(n, ast.Constant)]
                towers = [n for side in (node.right, node.left if constant_only(node.left) else node.right)
                          for n in ast.walk(side) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)]
                if towers or any(abs(c) > 1000 for c in consts if isinstance(c, (int, float))):
                    refuse("a constant exponent above 1000 or a tower of powers")
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, allowed_ops):
                refuse(f"operator {type(node.op).__name__}")
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, allowed_ops) for op in node.ops):
                refuse("this comparison")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _LOSS_FUNCS or node.keywords:
                refuse("function call " + repr(ast.unparse(node.func)))
        else:
            refuse(type(node).__name__)


def parse_loss(loss: Any):
    """A sympy expression in the real symbol ``u`` from a name, a string or a sympy expression."""
    import sympy as sp

    u = sp.Symbol("u", real=True)
    if isinstance(loss, sp.Expr):
        expr = loss.subs({s: u for s in loss.free_symbols if s.name == "u"})
    else:
        if not isinstance(loss, str) or not loss.strip():
            raise MdcertError(f"invalid loss {loss!r}; give a name ({', '.join(NAMED_LOSSES)}) or an expression in u")
        text = NAMED_LOSSES.get(loss.strip().lower(), loss)
        _check_loss_text(text, loss)
        try:
            from sympy.parsing.sympy_parser import parse_expr, standard_transformations

            expr = parse_expr(text, local_dict={"u": u, "Max": sp.Max, "Min": sp.Min, "Abs": sp.Abs},
                              transformations=standard_transformations, evaluate=True)
        except Exception:  # sympy raises many types on garbage
            raise MdcertError(f"cannot parse loss expression {loss!r}; write it in u, e.g. 'log(1 + exp(-u))'") from None
    if not isinstance(expr, sp.Expr):
        raise MdcertError(f"loss {loss!r} is not an expression in u")
    extra = [s.name for s in expr.free_symbols if s != u]
    if extra:
        raise MdcertError(f"loss {loss!r} has free symbols {extra}; the only variable allowed is u")
    return expr, u


def _breakpoints(expr, u):
    """Candidate non-smooth points: zeros of the arguments of Abs/sign/Heaviside, Max/Min switches,
    Piecewise condition boundaries. Returns a list of exact sympy numbers, or None if unknown."""
    import sympy as sp

    cands = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, (sp.Abs, sp.sign, sp.Heaviside)):
            cands.append(node.args[0])
        elif isinstance(node, (sp.Max, sp.Min)):
            args = node.args
            cands.extend(a - b for i, a in enumerate(args) for b in args[i + 1:])
        elif isinstance(node, sp.Piecewise):
            for _, cond in node.args:
                for rel in cond.atoms(sp.core.relational.Relational):
                    cands.append(rel.lhs - rel.rhs)
        elif isinstance(node, (sp.floor, sp.ceiling, sp.frac)):
            return None
    points = []
    for g in cands:
        if not g.has(u):
            continue
        sol = sp.solveset(sp.Eq(g, 0), u, sp.S.Reals)
        if not isinstance(sol, sp.FiniteSet):
            return None
        points.extend(sol)
    return sorted(set(points), key=lambda x: float(x))


def _witness_points(interval):
    """Two exact points a < b inside a sympy Interval."""
    import sympy as sp

    lo, hi = interval.inf, interval.sup
    if lo == -sp.oo and hi == sp.oo:
        return sp.Integer(0), sp.Integer(1)
    if lo == -sp.oo:
        return hi - 2, hi - 1
    if hi == sp.oo:
        return lo + 1, lo + 2
    return lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3


def _first_interval(s):
    import sympy as sp

    if isinstance(s, sp.Interval) and s.measure > 0:
        return s
    if isinstance(s, sp.Union):
        for part in s.args:
            if isinstance(part, sp.Interval) and part.measure > 0:
                return part
    return None


def _unknown(quantity: str, detail: str) -> Evidence:
    return Evidence(quantity, Fraction(0), Fraction(1), Method.EXACT, "==", Fraction(1), detail)


@dataclass(frozen=True)
class LossAdmissible(Predicate):
    """The loss satisfies the paper's Assumption A (symbolic proof or exact counterexample).

    Attributes:
        loss: a name in `NAMED_LOSSES`, an expression string in ``u``, or a sympy expression.
    """

    loss: Any = "logistic"
    name = "loss_admissible"

    def check(self, problem=None) -> HypothesisReport:
        """Evaluate (the problem is not used: the assumption is about the loss alone)."""
        import sympy as sp
        from sympy.calculus.util import continuous_domain

        expr, u = parse_loss(self.loss)
        d1 = sp.diff(expr, u)
        ev: list[Evidence] = []
        q_diff = "l is differentiable on R"
        q_lip = "l' is bounded and Lipschitz on every closed interval"
        # --- defined and continuous on R
        try:
            dom = continuous_domain(expr, u, sp.S.Reals)
        except Exception:
            dom = None
        smooth_known = False
        if dom is not None and dom != sp.S.Reals:
            bad = sp.S.Reals - dom
            pt = bad.inf if bad.inf.is_finite else None
            ev.append(Evidence.statement(q_diff, False, method=Method.EXACT,
                                         detail=f"sympy: l is not defined or not continuous on {bad}"
                                                + (f" (e.g. u = {pt})" if pt is not None else "")))
        else:
            pts = _breakpoints(expr, u)
            h = sp.Symbol("h", positive=True)
            kink = None
            if pts:
                for c in pts:
                    dq = (expr.subs(u, c + h) - expr.subs(u, c)) / h
                    right = sp.limit(dq, h, 0, "+")
                    dqm = (expr.subs(u, c) - expr.subs(u, c - h)) / h
                    left = sp.limit(dqm, h, 0, "+")
                    if left.is_finite and right.is_finite and (left - right).is_zero is False:
                        kink = (c, left, right)
                        break
            if kink is not None:
                c, left, right = kink
                ev.append(Evidence.statement(q_diff, False, method=Method.EXACT,
                                             detail=f"kink at u = {c}: one-sided derivatives {left} and {right}"))
            else:
                try:
                    d2dom = continuous_domain(sp.diff(expr, u, 2), u, sp.S.Reals) if pts == [] else None
                except Exception:
                    d2dom = None
                if d2dom == sp.S.Reals:
                    smooth_known = True
                    ev.append(Evidence.statement(q_diff, True, method=Method.EXACT,
                                                 detail=f"sympy: l'(u) = {d1} exists on R"))
                    ev.append(Evidence.statement(q_lip, True, method=Method.EXACT,
                                                 detail="sympy: l'' is continuous on R, so l' is C^1"))
                else:
                    ev.append(_unknown(q_diff, "symbolic differentiability check inconclusive"))
                    ev.append(_unknown(q_lip, "could not show l'' continuous on R"))
        # --- strictly decreasing
        dec = _decreasing(expr, d1, u)
        ev.append(dec)
        return HypothesisReport.from_evidence(
            self.name, ev,
            holds=f"loss {expr} satisfies the assumption (symbolic proof)",
            fails=f"loss {expr} violates the assumption: "
                  + "; ".join(e.quantity.replace("l is", "not").replace("l' is", "l' not") + f" ({e.detail})"
                              for e in ev if e.implies() is not None and e.implies().value == "fails")
                  + "; use logistic or exponential",
            undecided=f"could not prove or refute the assumption for {expr}" + ("" if smooth_known else
                                                                               " (smoothness unknown)"))


def _decreasing(expr, d1, u) -> Evidence:
    import sympy as sp

    q = "l is strictly decreasing on R"
    if d1.is_negative:
        return Evidence.statement(q, True, method=Method.EXACT, detail=f"sympy: l'(u) = {d1} < 0 for all real u")
    try:
        pos = sp.solveset(d1 > 0, u, sp.S.Reals)
        zero = sp.solveset(sp.Eq(d1, 0), u, sp.S.Reals)
    except Exception:
        return _unknown(q, "sympy could not solve l'(u) > 0")
    for s, what in ((pos, "increasing"), (zero, "constant")):
        iv = _first_interval(s)
        if iv is None:
            continue
        a, b = _witness_points(iv)
        diff = expr.subs(u, b) - expr.subs(u, a)
        if diff.is_nonnegative is None:
            diff = sp.cancel(sp.expand(diff))
        if diff.is_nonnegative:
            return Evidence.statement(q, False, method=Method.EXACT,
                                      detail=f"l is {what} on {iv}: l({a}) = {expr.subs(u, a)}, "
                                             f"l({b}) = {expr.subs(u, b)}")
    if pos == sp.S.EmptySet and isinstance(zero, sp.FiniteSet):
        return Evidence.statement(q, True, method=Method.EXACT,
                                  detail=f"sympy: l' <= 0 with isolated zeros {sorted(zero, key=float)}")
    return _unknown(q, f"sympy: sign of l'(u) = {d1} not decided")


def loss_admissible(loss: Any = "logistic") -> LossAdmissible:
    """Predicate: the loss is strictly decreasing and differentiable with locally bounded, Lipschitz l'."""
    return LossAdmissible(loss=loss)
