"""``loss_admissible(l)``: the paper's loss assumption, checked symbolically with sympy (docs/theory.md section 5.1).

The assumption (arXiv:2410.14581, Assumption A): l : R -> R is strictly decreasing and
differentiable, and l' is bounded and Lipschitz on every closed interval; mdcert checks l' < 0 at
every real u (docs/theory.md section 5.1 says why). The check proves or refutes four parts; a part
is HOLDS only when sympy *proves* it, and any unknown, None or exception along the way leaves it
UNDECIDED:

* real-valued and continuous on R: first the expression *as written* (parsed without sympy's
  automatic simplification): every log, root, power, division, special function and Piecewise
  contributes a domain condition, proved on R or refuted at an exact point (`theorems.domain`);
  then the simplified form node by node (`theorems.realfun.real_continuous`); refuted by an exact
  point where l is undefined or not real, or a jump (one-sided limits differ);
* differentiable on R, and l' bounded and Lipschitz on closed intervals: proved when the expression
  has no kinked or step function and l'' is real and continuous on R (then l' is C^1); refuted by a
  kink (exact one-sided derivatives that differ);
* l' < 0 on R (so l is strictly decreasing): proved when l is continuous, smooth except at finitely
  many exact points, and sympy's assumptions show ``l' < 0``; refuted by exact points ``a < b``
  with ``l(a) <= l(b)``, or by an exact point where l' = 0 or a ball-arithmetic l' > 0.

The text is parsed and bounded by `theorems.loss_parse` before sympy sees it; the symbolic work runs
under a time limit (`theorems.timelimit`) and ends UNDECIDED with a message when it is reached.
Named losses: logistic ``log(1 + exp(-u))``, exponential ``exp(-u)``, linear ``-u``, hinge
``Max(0, 1 - u)``, squared ``(1 - u)**2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from theorems.context import Predicate
from theorems.domain import domain_check, evaluated, freeze, set_points, sign_at, thaw, value_at
from theorems.loss_parse import NAMED_LOSSES, parse_loss, parse_written
from theorems.realfun import (SAMPLE_POINTS, breakpoints, jump, jump_candidates, real_continuous, smooth_fragment,
                              witness)
from theorems.timelimit import TimeLimitExceeded, call_with_time_limit
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict

__all__ = ["NAMED_LOSSES", "LossAdmissible", "loss_admissible", "parse_loss", "analyse_loss", "analyse_frozen",
           "DEFAULT_TIME_LIMIT"]

#: seconds of symbolic work before the check answers UNDECIDED
DEFAULT_TIME_LIMIT = 20.0

Q_REAL = "l is real-valued and continuous on R"
Q_DIFF = "l is differentiable on R"
Q_LIP = "l' is bounded and Lipschitz on every closed interval"
Q_DEC = "l' < 0 at every real u (l strictly decreasing)"
NAME = "loss_admissible"


def _unknown(quantity: str, detail: str) -> Evidence:
    return Evidence(quantity, Fraction(0), Fraction(1), Method.EXACT, "==", Fraction(1), detail)


def _proved(quantity: str, detail: str) -> Evidence:
    return Evidence.statement(quantity, True, method=Method.EXACT, detail=detail)


def _refuted(quantity: str, detail: str) -> Evidence:
    return Evidence.statement(quantity, False, method=Method.EXACT, detail=detail)


def _short(x, n: int = 60) -> str:
    text = " ".join(str(x).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _continuity(expr, u) -> Evidence:
    import sympy as sp

    if real_continuous(expr, u):
        return _proved(Q_REAL, "proved node by node (sympy assumptions for every side condition)")
    points = [sp.nsimplify(c) for c in SAMPLE_POINTS]
    try:
        from sympy.calculus.util import continuous_domain

        bad = sp.S.Reals - continuous_domain(expr, u, sp.S.Reals)
        points = set_points(bad) + points
    except Exception:  # sympy raises NotImplementedError and others for many functions
        pass
    try:
        points = (breakpoints(expr, u) or []) + points
        cands = jump_candidates(expr, u)
    except Exception:
        cands = []
    hit = witness(expr, u, cands + points)
    if hit is not None:
        c, v, what = hit
        return _refuted(Q_REAL, f"l is not defined or not continuous on R: l({c}) = {_short(v)} is {what}")
    hit = jump(expr, u, cands)
    if hit is not None:
        c, left, value, right = hit
        return _refuted(Q_REAL, f"l is not defined or not continuous on R: at u = {c} the left limit is "
                                f"{_short(left, 30)}, the value {_short(value, 30)}, the right limit {_short(right, 30)}")
    return _unknown(Q_REAL, "could not prove l real-valued and continuous at every real u (a side condition "
                            "such as a positive log argument is not decided by sympy)")


def _kink(expr, u, pts) -> Evidence | None:
    import sympy as sp

    h = sp.Symbol("h", positive=True)
    for c in pts:
        try:
            right = sp.limit((expr.subs(u, c + h) - expr.subs(u, c)) / h, h, 0, "+")
            left = sp.limit((expr.subs(u, c) - expr.subs(u, c - h)) / h, h, 0, "+")
        except Exception:  # no refutation from a failed limit
            continue
        if all(x.is_real is True and x.is_finite is True for x in (left, right)) and (left - right).is_zero is False:
            return _refuted(Q_DIFF, f"kink at u = {c}: one-sided derivatives {_short(left, 30)} and {_short(right, 30)}")
    return None


def _derivative_witness(d1, u) -> Evidence | None:
    """An exact grid point where l' = 0 (exactly) or l' > 0 (ball arithmetic): either refutes l' < 0."""
    import sympy as sp

    grid = [sp.Rational(k, 2) for k in range(-6, 7)] + [sp.Integer(k) for k in (-100, -10, -5, 5, 10, 100)]
    for c in sorted(grid, key=abs):
        try:
            s = sign_at(d1.subs(u, c))
        except Exception:  # overflow, non-numeric results: no witness here
            continue
        if s == 0:
            return _refuted(Q_DEC, f"l'({c}) = 0 exactly; the assumption needs l' < 0 at every u")
        if s == 1:
            return _refuted(Q_DEC, f"l'({c}) > 0 (ball arithmetic): l is increasing near u = {c}")
    return None


def _pair_witness(value, pairs, what: str) -> Evidence | None:
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
            return _refuted(Q_DEC, f"l is {what}: l({a}) = {_short(la, 30)}, l({b}) = {_short(lb, 30)}")
    return None


def sp_cancel(x):
    import sympy as sp

    try:
        return sp.cancel(sp.expand(x))
    except Exception:
        return x


def _first_interval(s):
    import sympy as sp

    parts = s.args if isinstance(s, sp.Union) else (s,)
    for part in parts:
        if isinstance(part, sp.Interval) and part.measure.is_positive:
            return part
    return None


def _witness_points(iv):
    import sympy as sp

    lo, hi = iv.inf, iv.sup
    if lo == -sp.oo and hi == sp.oo:
        return sp.Integer(0), sp.Integer(1)
    if lo == -sp.oo:
        return hi - 2, hi - 1
    if hi == sp.oo:
        return lo + 1, lo + 2
    return lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3


def _decreasing(value, d1, u, *, continuous: bool, smooth: bool, pts) -> Evidence:
    """l' < 0 on R: refuted by a pair l(a) <= l(b) or an exact l' >= 0; proved by sympy."""
    import sympy as sp

    grid = [sp.nsimplify(c) for c in ("-3", "-2", "-1", "-1/2", "0", "1/2", "1", "2", "3")]
    hit = _pair_witness(value, zip(grid, grid[1:]), "not decreasing")
    if hit is not None or d1 is None:
        return hit or _unknown(Q_DEC, "not examined: l is not shown to be defined on all of R")
    provable = continuous and pts is not None and real_continuous(d1, u, jumps_ok=True)
    if provable and d1.is_negative is True:
        return _proved(Q_DEC, f"sympy: l'(u) = {_short(d1)} < 0 for all real u (except finitely many kinks)")
    try:
        pos = sp.solveset(d1 > 0, u, sp.S.Reals)
        zero = sp.solveset(sp.Eq(d1, 0), u, sp.S.Reals)
    except Exception:
        pos = zero = None
    for s, what in ((pos, "increasing"), (zero, "constant")):
        iv = None if s is None else _first_interval(s)
        if iv is not None:
            try:
                hit = _pair_witness(value, [_witness_points(iv)], f"{what} on {iv}")
            except Exception:
                hit = None
            if hit is not None:
                return hit
    if continuous and smooth:   # l' is the formal derivative everywhere: an exact zero or positive value refutes
        for c in ([] if zero is None else _safe_points(zero)):
            if sign_at(d1.subs(u, c)) == 0:
                return _refuted(Q_DEC, f"l'({c}) = 0 exactly; the assumption needs l' < 0 at every u")
        hit = _derivative_witness(d1, u)
        if hit is not None:
            return hit
    if not provable:
        return _unknown(Q_DEC, "l' < 0 needs l continuous with a derivative defined except at finitely many "
                               "exact points; not proved")
    return _unknown(Q_DEC, f"sympy: sign of l'(u) = {_short(d1)} not decided")


def _safe_points(s) -> list:
    try:
        return set_points(s)
    except Exception:  # an unusual set type: no points from it
        return []


def analyse_loss(expr) -> HypothesisReport:
    """The report for a parsed, bounded loss expression, examined as written (runs under
    `call_with_time_limit`)."""
    import sympy as sp

    u = sp.Symbol("u", real=True)
    simple = evaluated(expr)

    def value(c):
        pv = value_at(expr, u, c)
        return pv.value if pv.status == "defined" and sign_at(pv.value) is not None else None

    dom = domain_check(expr, u)
    if dom.status == "holds":
        real_ev = _continuity(simple, u)
    elif dom.status == "fails":
        real_ev = _refuted(Q_REAL, f"l is not defined or not continuous on R: {dom.detail}")
    else:
        real_ev = _unknown(Q_REAL, dom.detail)
    continuous = real_ev.implies() is Verdict.HOLDS
    ev = [real_ev]
    if dom.status != "holds":    # the simplified form may differ from l where l is not defined
        ev.append(_unknown(Q_DIFF, "not examined: l is not shown to be defined on all of R"))
        ev.append(_unknown(Q_LIP, "not examined: l is not shown to be defined on all of R"))
        ev.append(_decreasing(value, None, u, continuous=False, smooth=False, pts=None))
        return _report(expr, ev)
    try:
        d1 = sp.diff(simple, u)
        pts = breakpoints(simple, u)
    except Exception as exc:
        return HypothesisReport.from_evidence(NAME, ev + [_unknown(Q_DEC, f"sympy failed: {type(exc).__name__}")],
                                              holds="", fails=_fails_message(expr, ev),
                                              undecided=f"sympy could not differentiate {_short(expr)}")
    kink = _kink(simple, u, pts) if continuous and pts else None
    smooth = smooth_fragment(simple)
    if kink is not None:
        ev.append(kink)
    elif continuous and smooth and real_continuous(sp.diff(d1, u), u):
        ev.append(_proved(Q_DIFF, f"sympy: l'(u) = {_short(d1)} exists on R"))
        ev.append(_proved(Q_LIP, "sympy: l'' is real and continuous on R, so l' is C^1"))
    else:
        ev.append(_unknown(Q_DIFF, "symbolic differentiability check inconclusive"))
        ev.append(_unknown(Q_LIP, "could not show l'' real and continuous on R"))
    ev.append(_decreasing(value, d1, u, continuous=continuous, smooth=smooth, pts=pts))
    return _report(expr, ev)


def analyse_frozen(frozen: tuple) -> HypothesisReport:
    """`analyse_loss` of a tree frozen by `theorems.domain.freeze` (what crosses a process boundary:
    a pickled sympy tree comes back simplified)."""
    return analyse_loss(thaw(frozen))


def _report(written, ev) -> HypothesisReport:
    unknown = "; ".join(e.detail for e in ev if e.implies() is Verdict.UNDECIDED)
    return HypothesisReport.from_evidence(
        NAME, ev,
        holds=f"loss {_short(written)} satisfies the assumption (symbolic proof; its domain as written "
              f"proved to be R)",
        fails=_fails_message(written, ev),
        undecided=f"could not prove or refute the assumption for {_short(written)}: {unknown}")


def _fails_message(expr, ev) -> str:
    parts = [_FAILED[e.quantity] + f" ({e.detail})" for e in ev if e.implies() is Verdict.FAILS]
    return f"loss {_short(expr)} violates the assumption: " + "; ".join(parts) + "; use logistic or exponential"


_FAILED = {Q_REAL: "not real-valued and continuous on R", Q_DIFF: "not differentiable on R",
           Q_LIP: "l' not bounded and Lipschitz on every closed interval", Q_DEC: "not l' < 0 on R"}

_CACHE: dict = {}


@dataclass(frozen=True)
class LossAdmissible(Predicate):
    """The loss satisfies the paper's Assumption A (symbolic proof or exact counterexample;
    docs/theory.md section 5.1).

    Attributes:
        loss: a name in `NAMED_LOSSES`, an expression string in ``u``, or a sympy expression.
        time_limit: seconds of symbolic work; past it the verdict is UNDECIDED with a message.
    """

    loss: Any = "logistic"
    time_limit: float = DEFAULT_TIME_LIMIT
    name = NAME

    def check(self, problem=None) -> HypothesisReport:
        """Evaluate (the problem is not used: the assumption is about the loss alone).

        Raises:
            MdcertError: the loss is refused by the parser (one line saying why).
        """
        expr, _, _ = parse_written(self.loss)
        if expr in _CACHE:
            return _CACHE[expr]
        try:
            report = call_with_time_limit(analyse_frozen, (freeze(expr),), seconds=self.time_limit)
        except TimeLimitExceeded:
            return HypothesisReport(self.name, Verdict.UNDECIDED,
                                    (_unknown(Q_REAL, f"symbolic proof stopped after {self.time_limit:g} s"),),
                                    f"the symbolic proof for {_short(expr)} did not finish within "
                                    f"{self.time_limit:g} s; simplify the loss or use logistic or exponential")
        except (RecursionError, MemoryError, ArithmeticError, TypeError, ValueError, AttributeError,
                NotImplementedError, RuntimeError) as exc:
            return HypothesisReport(self.name, Verdict.UNDECIDED,
                                    (_unknown(Q_REAL, f"sympy failed: {type(exc).__name__}"),),
                                    f"sympy failed on {_short(expr)} ({type(exc).__name__}); the assumption is "
                                    f"neither proved nor refuted - simplify the loss")
        if len(_CACHE) < 256:
            _CACHE[expr] = report
        return report


def loss_admissible(loss: Any = "logistic", *, time_limit: float = DEFAULT_TIME_LIMIT) -> LossAdmissible:
    """Predicate: the loss is real, strictly decreasing and differentiable with locally bounded, Lipschitz l'."""
    return LossAdmissible(loss=loss, time_limit=time_limit)
