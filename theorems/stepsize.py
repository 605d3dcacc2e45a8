"""The step-size hypothesis along a recorded trajectory (docs/theory.md section 2 and section 5).

``step_size_convex_along_path(eta, trajectory)`` checks, on every recorded step ``W_k -> W_{k+1}``,
the relative-smoothness inequality

    D_L(W_{k+1}, W_k) <= (1/eta) D_psi(W_{k+1}, W_k),

the weakest checkable form of "psi - eta L is convex along the path" (descent lemma, docs/theory.md section 2).

Rigour: the logits ``s_it = x_it^T W z_i`` are computed EXACTLY as integer products (float64 entries
of W, X, z are dyadic) with one python-flint ``fmpz_mat`` product for the whole path. A cheap rigorous
pre-filter (`theorems.prefilter`: exact integer bounds, no exp, no per-entry powers) proves the steps
that hold with margin. The rest are evaluated in arb balls: ``L`` depends on W only through the
logits, so ``D_L(W', W) = (1/n) sum_i [l(u_i') - l(u_i) - l'(u_i) y_i sum_t sigma_it (h_it - f_i)
(s'_it - s_it)]`` with ``h_it = v^T x_it``; softmax, the loss and ``|W|^{p-1}`` are balls. The
catastrophic cancellation in both Bregman divergences (differences of O(1) numbers that are
O(step^2)) is absorbed by working precision: 96 bits first (numpy object arrays of balls, no Python
loop per number), then only the steps whose balls straddle the threshold at 320 and 1280 bits.
Exactly repeated logits give ``D_L = 0`` exactly. Anything still straddling is UNDECIDED.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_exact, format_sci, parse_nonnegative, parse_p
from theorems.logits import RIGOROUS_LOSSES
from theorems.context import Predicate, as_context
from theorems.segment import segment_convexity
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict
from theorems.stepcheck import PRECISIONS, StepCheck, check_steps

__all__ = ["StepSizeConvexAlongPath", "step_size_convex_along_path", "StepCheck", "check_steps"]


@dataclass(frozen=True, eq=False)
class StepSizeConvexAlongPath(Predicate):
    """Relative smoothness ``D_L <= (1/eta_k) D_psi`` on every recorded step (docs/theory.md sections 2.3,
    2.4 and 5.5), with the step rule of the trajectory.

    Attributes:
        eta: the step size (exact rational from its decimal string); with normalized steps the base
            step size lr.
        step_etas: None (constant steps: ``eta_k = eta``) or the K effective step sizes of a normalized
            path, ``eta_k = lr / ||G(W_k)||_q`` as exact rationals (the float64 values the optimizer used).
        trajectory: float64 iterates (K+1, d, d) of W with the problem's fixed decoder.
        p: exact exponent of the potential.
        loss: "logistic" (default), "exponential" or "linear".
        precisions: working precisions (bits) of the adaptive evaluation.
        segment: also prove convexity of ``psi - eta L`` on every whole segment (`theorems.segment`).
        prefilter: try the cheap rigorous bounds of `theorems.prefilter` first.
    """

    eta: Any
    trajectory: Any
    p: Any = 2
    loss: str = "logistic"
    precisions: tuple[int, ...] = PRECISIONS
    segment: bool = False
    prefilter: bool = True
    step_etas: Any = None
    name = "step_size_convex_along_path"

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        eta = parse_nonnegative(self.eta, "eta")
        if eta <= 0:
            raise MdcertError(f"invalid step size eta={self.eta!r}; must be > 0")
        p = parse_p(self.p)
        normalized = self.step_etas is not None
        if normalized:
            etas = [Fraction(x) for x in self.step_etas]
            if any(x <= 0 for x in etas):
                raise MdcertError("the per-step step sizes of a normalized path must all be > 0")
            if self.segment:
                raise MdcertError(
                    "segment convexity (--segment) is for constant steps; drop --segment or "
                    "--normalize"
                )
        rule = (
            "eta_k = eta/||G(W_k)||_q (normalized steps)"
            if normalized
            else "eta_k = eta (constant steps)"
        )
        if self.loss not in RIGOROUS_LOSSES:
            ev = Evidence(
                f"relative smoothness along the path (loss {self.loss})",
                None,
                None,
                Method.SAMPLED,
                detail="no ball evaluation of this loss",
            )
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                (ev,),
                f"the step check is implemented in balls for {', '.join(RIGOROUS_LOSSES)} only",
            )
        res = check_steps(
            ctx.problem,
            self.trajectory,
            etas if normalized else eta,
            p,
            loss=self.loss,
            precisions=tuple(self.precisions),
            prefilter=self.prefilter,
        )
        K = res.status.size
        n_ok, n_bad = int((res.status == 1).sum()), int((res.status == -1).sum())
        n_und = K - n_ok - n_bad
        # enclosure of max_k eta D_L / D_psi; a step without a ratio enclosure makes the top unbounded
        los = [x for x in res.ratio_lo if x is not None]
        his = [x for x in res.ratio_hi if x is not None]
        unbounded = any(x is None for x in res.ratio_hi)
        lo = max(los) if los else None
        hi = None if unbounded or not his else max(his)
        bad = [int(k) for k in np.flatnonzero(res.status == -1)]
        und = [int(k) for k in np.flatnonzero(res.status == 0)]
        data = {
            "steps": K,
            "proved": n_ok,
            "refuted": n_bad,
            "undecided": n_und,
            "proved_by_prefilter": int((res.precision == -1).sum()),
            "first_refuted": bad[:5],
            "first_undecided": und[:5],
            "max_precision_bits": int(res.precision.max()) if K else 0,
            "step_rule": "normalized" if normalized else "constant",
        }
        if normalized:
            data["eta_k_range"] = (
                [format_sci(min(etas), 6), format_sci(max(etas), 6)] if etas else None
            )
        detail = (
            f"{rule}; exact logits (fmpz_mat); cheap exact bounds, then arb balls for softmax, loss and "
            f"|W|^(p-1); "
            f"{n_ok} proved ({data['proved_by_prefilter']} by the pre-filter), "
            f"{n_bad} refuted, {n_und} undecided of {K} steps"
        )
        steps_ev = Evidence(
            "number of recorded steps violating D_L(W_{k+1},W_k) <= D_psi(W_{k+1},W_k)/eta_k",
            Fraction(n_bad),
            Fraction(n_bad + n_und),
            Method.INTERVAL,
            "==",
            Fraction(0),
            detail=detail,
            data=data,
        )
        evidence = [steps_ev]
        if lo is not None or hi is not None:
            evidence.append(
                Evidence(
                    "max_k eta_k D_L(W_{k+1},W_k) / D_psi(W_{k+1},W_k)",
                    lo,
                    hi,
                    Method.INTERVAL,
                    detail="1 or less means the step passes; pre-filtered steps give upper "
                    "bounds only",
                )
            )
        if hi is not None and hi > 0:
            evidence.append(
                Evidence(
                    "largest eta with every recorded step passing (eta / max ratio)"
                    + (", as a scale of every eta_k" if normalized else ""),
                    eta / hi,
                    None if lo is None or lo <= 0 else eta / lo,
                    Method.INTERVAL,
                    detail="relative smoothness along this path only",
                )
            )
        verdict = Verdict.FAILS if n_bad else (Verdict.UNDECIDED if n_und else Verdict.HOLDS)
        seg_note, s_und = "", 0
        if self.segment:
            seg = segment_convexity(ctx.problem, self.trajectory, eta, p, loss=self.loss)
            s_bad, s_und = int((seg.status == -1).sum()), int((seg.status == 0).sum())
            evidence.append(
                Evidence(
                    "number of segments [W_k, W_{k+1}] on which psi - eta L is not convex",
                    Fraction(s_bad),
                    Fraction(s_bad + s_und),
                    Method.INTERVAL,
                    "==",
                    Fraction(0),
                    detail=f"interval bisection of (psi - eta L)'' in tau; {seg.evaluations} ball "
                    f"evaluations",
                    data={
                        "refuted": [int(k) for k in np.flatnonzero(seg.status == -1)][:5],
                        "undecided": [int(k) for k in np.flatnonzero(seg.status == 0)][:5],
                    },
                )
            )
            verdict = verdict & (
                Verdict.FAILS if s_bad else (Verdict.UNDECIDED if s_und else Verdict.HOLDS)
            )
            seg_note = f"; segment convexity: {s_bad} refuted, {s_und} undecided"
        if verdict is Verdict.HOLDS:
            msg = (
                f"D_L <= D_psi/eta_k proved on all {K} recorded steps ({rule}, eta={format_exact(eta)}, "
                f"p={format_exact(p)})"
                + (" and psi - eta L convex on every segment" if self.segment else "")
            )
        elif verdict is Verdict.FAILS:
            msg = (
                f"{n_bad} of {K} steps violate D_L <= D_psi/eta_k ({rule})"
                + (f" (first at step {bad[0]})" if bad else "")
                + seg_note
                + "; lower the step size"
                + (
                    f" below {format_sci(eta / hi, 3)}"
                    if hi is not None and hi > 0 and n_bad
                    else ""
                )
            )
        else:
            parts = []
            if n_und:
                parts.append(
                    f"{n_und} steps undecided even at {max(self.precisions)} bits (first {und[:3]}); "
                    f"D_L and D_psi/eta_k are too close to separate"
                )
            if s_und:
                parts.append(
                    f"convexity of psi - eta L on {s_und} segments neither proved nor refuted by bisection"
                )
            msg = "; ".join(parts)
        return HypothesisReport(self.name, verdict, tuple(evidence), msg)


def step_size_convex_along_path(
    eta: Any,
    trajectory: Any,
    *,
    p: Any = 2,
    loss: str = "logistic",
    precisions: tuple[int, ...] = PRECISIONS,
    segment: bool = False,
    prefilter: bool = True,
    step_etas: Any = None,
) -> StepSizeConvexAlongPath:
    """Predicate: the relative-smoothness inequality holds on every recorded step of ``trajectory``
    (and, with ``segment=True``, ``psi - eta L`` is convex on every whole segment); ``step_etas``: the
    per-step sizes of a normalized path (docs/theory.md section 2.3), None for constant steps."""
    return StepSizeConvexAlongPath(
        eta=eta,
        trajectory=trajectory,
        p=p,
        loss=loss,
        precisions=tuple(precisions),
        segment=segment,
        prefilter=prefilter,
        step_etas=None if step_etas is None else tuple(step_etas),
    )
