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
from typing import Any

from theorems.context import Predicate
from theorems.domain import domain_check, evaluated, freeze, set_points, sign_at, thaw, value_at
from theorems.loss_parse import NAMED_LOSSES, parse_loss, parse_written
from theorems.realfun import (
    SAMPLE_POINTS,
    breakpoints,
    jump,
    jump_candidates,
    real_continuous,
    smooth_fragment,
    witness,
)
from theorems.timelimit import TimeLimitExceeded, call_with_time_limit
from theorems.verdict import Evidence, HypothesisReport, Verdict
from theorems.loss_witness import (
    Q_DEC,
    Q_DIFF,
    Q_LIP,
    Q_REAL,
    derivative_witness,
    first_interval,
    kink_witness,
    pair_witness,
    proved_evidence,
    refuted_evidence,
    safe_points,
    clip_text,
    unknown_evidence,
    witness_points,
)

__all__ = [
    "NAMED_LOSSES",
    "LossAdmissible",
    "loss_admissible",
    "parse_loss",
    "analyse_loss",
    "analyse_frozen",
    "DEFAULT_TIME_LIMIT",
]

#: seconds of symbolic work before the check answers UNDECIDED
DEFAULT_TIME_LIMIT = 20.0

NAME = "loss_admissible"


def _continuity(expr, u) -> Evidence:
    import sympy as sp

    if real_continuous(expr, u):
        return proved_evidence(
            Q_REAL, "proved node by node (sympy assumptions for every side condition)"
        )
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
        return refuted_evidence(
            Q_REAL, f"l is not defined or not continuous on R: l({c}) = {clip_text(v)} is {what}"
        )
    hit = jump(expr, u, cands)
    if hit is not None:
        c, left, value, right = hit
        return refuted_evidence(
            Q_REAL,
            f"l is not defined or not continuous on R: at u = {c} the left limit is "
            f"{clip_text(left, 30)}, the value {clip_text(value, 30)}, the right limit {clip_text(right, 30)}",
        )
    return unknown_evidence(
        Q_REAL,
        "could not prove l real-valued and continuous at every real u (a side condition "
        "such as a positive log argument is not decided by sympy)",
    )


def _decreasing(value, d1, u, *, continuous: bool, smooth: bool, pts) -> Evidence:
    """l' < 0 on R: refuted by a pair l(a) <= l(b) or an exact l' >= 0; proved by sympy."""
    import sympy as sp

    grid = [sp.nsimplify(c) for c in ("-3", "-2", "-1", "-1/2", "0", "1/2", "1", "2", "3")]
    hit = pair_witness(value, zip(grid, grid[1:]), "not decreasing")
    if hit is not None or d1 is None:
        return hit or unknown_evidence(
            Q_DEC, "not examined: l is not shown to be defined on all of R"
        )
    provable = continuous and pts is not None and real_continuous(d1, u, jumps_ok=True)
    if provable and d1.is_negative is True:
        return proved_evidence(
            Q_DEC, f"sympy: l'(u) = {clip_text(d1)} < 0 for all real u (except finitely many kinks)"
        )
    try:
        pos = sp.solveset(d1 > 0, u, sp.S.Reals)
        zero = sp.solveset(sp.Eq(d1, 0), u, sp.S.Reals)
    except Exception:
        pos = zero = None
    for s, what in ((pos, "increasing"), (zero, "constant")):
        iv = None if s is None else first_interval(s)
        if iv is not None:
            try:
                hit = pair_witness(value, [witness_points(iv)], f"{what} on {iv}")
            except Exception:
                hit = None
            if hit is not None:
                return hit
    if (
        continuous and smooth
    ):  # l' is the formal derivative everywhere: an exact zero or positive value refutes
        for c in [] if zero is None else safe_points(zero):
            if sign_at(d1.subs(u, c)) == 0:
                return refuted_evidence(
                    Q_DEC, f"l'({c}) = 0 exactly; the assumption needs l' < 0 at every u"
                )
        hit = derivative_witness(d1, u)
        if hit is not None:
            return hit
    if not provable:
        return unknown_evidence(
            Q_DEC,
            "l' < 0 needs l continuous with a derivative defined except at finitely many "
            "exact points; not proved",
        )
    return unknown_evidence(Q_DEC, f"sympy: sign of l'(u) = {clip_text(d1)} not decided")


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
        real_ev = refuted_evidence(Q_REAL, f"l is not defined or not continuous on R: {dom.detail}")
    else:
        real_ev = unknown_evidence(Q_REAL, dom.detail)
    continuous = real_ev.implies() is Verdict.HOLDS
    ev = [real_ev]
    if dom.status != "holds":  # the simplified form may differ from l where l is not defined
        ev.append(
            unknown_evidence(Q_DIFF, "not examined: l is not shown to be defined on all of R")
        )
        ev.append(unknown_evidence(Q_LIP, "not examined: l is not shown to be defined on all of R"))
        ev.append(_decreasing(value, None, u, continuous=False, smooth=False, pts=None))
        return _report(expr, ev)
    try:
        d1 = sp.diff(simple, u)
        pts = breakpoints(simple, u)
    except Exception as exc:
        return HypothesisReport.from_evidence(
            NAME,
            ev + [unknown_evidence(Q_DEC, f"sympy failed: {type(exc).__name__}")],
            holds="",
            fails=_fails_message(expr, ev),
            undecided=f"sympy could not differentiate {clip_text(expr)}",
        )
    kink = kink_witness(simple, u, pts) if continuous and pts else None
    smooth = smooth_fragment(simple)
    if kink is not None:
        ev.append(kink)
    elif continuous and smooth and real_continuous(sp.diff(d1, u), u):
        ev.append(proved_evidence(Q_DIFF, f"sympy: l'(u) = {clip_text(d1)} exists on R"))
        ev.append(proved_evidence(Q_LIP, "sympy: l'' is real and continuous on R, so l' is C^1"))
    else:
        ev.append(unknown_evidence(Q_DIFF, "symbolic differentiability check inconclusive"))
        ev.append(unknown_evidence(Q_LIP, "could not show l'' real and continuous on R"))
    ev.append(_decreasing(value, d1, u, continuous=continuous, smooth=smooth, pts=pts))
    return _report(expr, ev)


def analyse_frozen(frozen: tuple) -> HypothesisReport:
    """`analyse_loss` of a tree frozen by `theorems.domain.freeze` (what crosses a process boundary:
    a pickled sympy tree comes back simplified)."""
    return analyse_loss(thaw(frozen))


def _report(written, ev) -> HypothesisReport:
    unknown = "; ".join(e.detail for e in ev if e.implies() is Verdict.UNDECIDED)
    return HypothesisReport.from_evidence(
        NAME,
        ev,
        holds=f"loss {clip_text(written)} satisfies the assumption (symbolic proof; its domain as written "
        f"proved to be R)",
        fails=_fails_message(written, ev),
        undecided=f"could not prove or refute the assumption for {clip_text(written)}: {unknown}",
    )


def _fails_message(expr, ev) -> str:
    parts = [_FAILED[e.quantity] + f" ({e.detail})" for e in ev if e.implies() is Verdict.FAILS]
    return (
        f"loss {clip_text(expr)} violates the assumption: "
        + "; ".join(parts)
        + "; use logistic or exponential"
    )


_FAILED = {
    Q_REAL: "not real-valued and continuous on R",
    Q_DIFF: "not differentiable on R",
    Q_LIP: "l' not bounded and Lipschitz on every closed interval",
    Q_DEC: "not l' < 0 on R",
}

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
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                (unknown_evidence(Q_REAL, f"symbolic proof stopped after {self.time_limit:g} s"),),
                f"the symbolic proof for {clip_text(expr)} did not finish within "
                f"{self.time_limit:g} s; simplify the loss or use logistic or exponential",
            )
        except (
            RecursionError,
            MemoryError,
            ArithmeticError,
            TypeError,
            ValueError,
            AttributeError,
            NotImplementedError,
            RuntimeError,
        ) as exc:
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                (unknown_evidence(Q_REAL, f"sympy failed: {type(exc).__name__}"),),
                f"sympy failed on {clip_text(expr)} ({type(exc).__name__}); the assumption is "
                f"neither proved nor refuted - simplify the loss",
            )
        if len(_CACHE) < 256:
            _CACHE[expr] = report
        return report


def loss_admissible(
    loss: Any = "logistic", *, time_limit: float = DEFAULT_TIME_LIMIT
) -> LossAdmissible:
    """Predicate: the loss is real, strictly decreasing and differentiable with locally bounded, Lipschitz l'."""
    return LossAdmissible(loss=loss, time_limit=time_limit)
