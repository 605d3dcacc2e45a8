"""Evidence and witness points of the loss check (`theorems.loss`; docs/theory.md section 5.1): the
four quantities checked, evidence constructors, exact points where a derivative vanishes or changes
sign, kinks, and points drawn from solution sets."""

from __future__ import annotations

from fractions import Fraction

from theorems.domain import set_points, sign_at
from theorems.verdict import Evidence, Method

__all__ = [
    "Q_DEC",
    "Q_DIFF",
    "Q_LIP",
    "Q_REAL",
    "derivative_witness",
    "first_interval",
    "kink_witness",
    "pair_witness",
    "proved_evidence",
    "refuted_evidence",
    "safe_points",
    "clip_text",
    "sp_cancel",
    "unknown_evidence",
    "witness_points",
]


Q_REAL = "l is real-valued and continuous on R"


Q_DIFF = "l is differentiable on R"


Q_LIP = "l' is bounded and Lipschitz on every closed interval"


Q_DEC = "l' < 0 at every real u (l strictly decreasing)"


def unknown_evidence(quantity: str, detail: str) -> Evidence:
    return Evidence(quantity, Fraction(0), Fraction(1), Method.EXACT, "==", Fraction(1), detail)


def proved_evidence(quantity: str, detail: str) -> Evidence:
    return Evidence.statement(quantity, True, method=Method.EXACT, detail=detail)


def refuted_evidence(quantity: str, detail: str) -> Evidence:
    return Evidence.statement(quantity, False, method=Method.EXACT, detail=detail)


def clip_text(x, n: int = 60) -> str:
    text = " ".join(str(x).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def kink_witness(expr, u, pts) -> Evidence | None:
    import sympy as sp

    h = sp.Symbol("h", positive=True)
    for c in pts:
        try:
            right = sp.limit((expr.subs(u, c + h) - expr.subs(u, c)) / h, h, 0, "+")
            left = sp.limit((expr.subs(u, c) - expr.subs(u, c - h)) / h, h, 0, "+")
        except Exception:  # no refutation from a failed limit
            continue
        if (
            all(x.is_real is True and x.is_finite is True for x in (left, right))
            and (left - right).is_zero is False
        ):
            return refuted_evidence(
                Q_DIFF,
                f"kink at u = {c}: one-sided derivatives {clip_text(left, 30)} and {clip_text(right, 30)}",
            )
    return None


def derivative_witness(d1, u) -> Evidence | None:
    """An exact grid point where l' = 0 (exactly) or l' > 0 (ball arithmetic): either refutes l' < 0."""
    import sympy as sp

    grid = [sp.Rational(k, 2) for k in range(-6, 7)] + [
        sp.Integer(k) for k in (-100, -10, -5, 5, 10, 100)
    ]
    for c in sorted(grid, key=abs):
        try:
            s = sign_at(d1.subs(u, c))
        except Exception:  # overflow, non-numeric results: no witness here
            continue
        if s == 0:
            return refuted_evidence(
                Q_DEC, f"l'({c}) = 0 exactly; the assumption needs l' < 0 at every u"
            )
        if s == 1:
            return refuted_evidence(
                Q_DEC, f"l'({c}) > 0 (ball arithmetic): l is increasing near u = {c}"
            )
    return None


def pair_witness(value, pairs, what: str) -> Evidence | None:
    """Exact points a < b with l(a) <= l(b), the values taken from the expression as written."""
    for a, b in pairs:
        la, lb = value(a), value(b)
        if la is None or lb is None:
            continue
        diff = lb - la
        s = sign_at(diff)
        if s is None:
            s = sign_at(sp_cancel(diff))
        if s in (0, 1):
            return refuted_evidence(
                Q_DEC, f"l is {what}: l({a}) = {clip_text(la, 30)}, l({b}) = {clip_text(lb, 30)}"
            )
    return None


def sp_cancel(x):
    import sympy as sp

    try:
        return sp.cancel(sp.expand(x))
    except Exception:
        return x


def first_interval(s):
    import sympy as sp

    parts = s.args if isinstance(s, sp.Union) else (s,)
    for part in parts:
        if isinstance(part, sp.Interval) and part.measure.is_positive:
            return part
    return None


def witness_points(iv):
    import sympy as sp

    lo, hi = iv.inf, iv.sup
    if lo == -sp.oo and hi == sp.oo:
        return sp.Integer(0), sp.Integer(1)
    if lo == -sp.oo:
        return hi - 2, hi - 1
    if hi == sp.oo:
        return lo + 1, lo + 2
    return lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3


def safe_points(s) -> list:
    try:
        return set_points(s)
    except Exception:  # an unusual set type: no points from it
        return []
