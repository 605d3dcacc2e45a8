"""Hypotheses of the p-GD result of arXiv:2205.12808 as predicates (docs/theory.md section 7.6).

The statement checked is the paper's main result as its abstract states it: p-GD (mirror descent with
``psi = ||w||_p^p / p``) on linearly separable classification data converges in direction to the
l_p max-margin classifier ``w_p``. The PDF was not read; the hypotheses below are the standard ones of
this literature (separable data, an exponential-tailed loss, a step size with ``psi - eta L`` convex),
not quoted conditions (docs/theory.md section 7.6 says so):

- `separable`: the exact certificate of `certify.certify_max_margin` (OPTIMAL -> HOLDS, a Gordan
  certificate -> FAILS, no verified result -> UNDECIDED);
- `loss_exponential_tail`: `theorems.loss.loss_admissible` (real, strictly decreasing, l' locally
  Lipschitz) and an exponential tail, known for the two named losses only;
- `step_size_measured`: the relative-smoothness condition sampled along a recorded path (float64,
  `experiments.linear.smoothness`): a value below ``-tolerance`` refutes it there (FAILS); otherwise
  UNDECIDED - samples never prove it.

No torch here: the measured values are passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from certify.errors import MdcertError
from theorems.loss import loss_admissible
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict

__all__ = [
    "PGD_STATEMENT",
    "TAILED_LOSSES",
    "PgdStatement",
    "loss_exponential_tail",
    "separable",
    "step_size_measured",
]

#: losses whose tail ``-l'(u) ~ e^(-u)`` is known (exponential: equal; logistic: e^-u / (1 + e^-u))
TAILED_LOSSES = ("exponential", "logistic")


@dataclass(frozen=True)
class PgdStatement:
    """The catalogue entry of the p-GD result: source, statement, hypotheses and the measured conclusion."""

    reference: str
    statement: str
    hypotheses: tuple[str, ...]
    conclusion: str
    standard_hypotheses: bool


PGD_STATEMENT = PgdStatement(
    reference="arXiv:2205.12808 (Sun, Ahn, Thrampoulidis, Azizan, NeurIPS 2022), main result as stated in "
    "the abstract; theorem number and exact conditions not read",
    statement="p-GD on linearly separable classification converges in direction to the l_p max-margin "
    "classifier w_p = argmin ||w||_p s.t. y_i x_i^T w >= 1",
    hypotheses=("separable", "loss_exponential_tail", "step_size_measured"),
    conclusion="D_psi(w_p/||w_p||_p, w(k)/||w(k)||_p) -> 0 (measured by mdcert pgd, never assumed)",
    standard_hypotheses=True,
)


def separable(cert) -> HypothesisReport:
    """From a `certify.Certificate` of `certify.certify_max_margin` at one p."""
    status = cert.status.value
    if status == "optimal":
        ev = Evidence.statement(
            "A w >= 1 is feasible (the data are linearly separable)",
            True,
            method=Method.EXACT,
            detail=f"certified l_p max-margin at p = {cert.p}: OPT in "
            f"[{float(cert.opt_lower):.6g}, {float(cert.opt_upper):.6g}]",
        )
        return HypothesisReport(
            "separable", Verdict.HOLDS, (ev,), "the data are separable (exact certificate)"
        )
    if status == "infeasible":
        ev = Evidence.statement(
            "A w >= 1 is feasible (the data are linearly separable)",
            False,
            method=Method.EXACT,
            detail="exact Gordan certificate: g >= 0, g != 0, A^T g = 0",
        )
        return HypothesisReport(
            "separable",
            Verdict.FAILS,
            (ev,),
            "the data are not linearly separable (exact Gordan certificate); p-GD has no "
            "max-margin direction to converge to",
        )
    return HypothesisReport(
        "separable",
        Verdict.UNDECIDED,
        (),
        f"no verified result ({status}); raise --digits or the time limit",
    )


def loss_exponential_tail(loss: str) -> HypothesisReport:
    """The loss assumption (`theorems.loss.loss_admissible`) and the exponential tail (named losses)."""
    loss = getattr(loss, "value", loss)  # a str Enum (experiments.linear.Loss) prints as its name
    if loss not in TAILED_LOSSES:
        raise MdcertError(f"loss must be one of {', '.join(TAILED_LOSSES)}, got {loss!r}")
    base = loss_admissible(loss).check()
    tail = Evidence.statement(
        "-l'(u) e^u -> 1 as u -> inf (exponential tail)",
        True,
        method=Method.EXACT,
        detail=f"{loss}: -l'(u) = e^-u" + (" / (1 + e^-u)" if loss == "logistic" else ""),
    )
    ev = (*base.evidence, tail)
    if base.verdict is Verdict.HOLDS:
        return HypothesisReport(
            "loss_exponential_tail", Verdict.HOLDS, ev, f"{loss}: admissible, exponential tail"
        )
    return HypothesisReport("loss_exponential_tail", base.verdict, ev, base.message)


def step_size_measured(values, *, tolerance: float = 1e-9, where: str = "") -> HypothesisReport:
    """The relative-smoothness condition sampled along a path: ``values`` as from
    `experiments.linear.smoothness.smoothness_margins` (>= 0: holds at that iterate)."""
    vals = [float(v) for v in values if math.isfinite(float(v))]
    if not vals:
        return HypothesisReport(
            "step_size_measured",
            Verdict.UNDECIDED,
            (),
            "the condition was not measured (no sample with w != 0, or too many variables)",
        )
    worst = min(vals)
    if worst < -tolerance:
        ev = Evidence.point(
            "min over samples of the psi - eta L convexity value",
            Fraction(worst),
            method=Method.SAMPLED,
            relation=">=",
            threshold=0,
            detail=f"float64 Hessian eigenvalues at {len(vals)} recorded iterates{where}",
        )
        return HypothesisReport(
            "step_size_measured",
            Verdict.FAILS,
            (ev,),
            f"psi - eta L is not convex at a recorded iterate (value {worst:.3g} < 0, float64); "
            f"use a smaller --lr",
        )
    ev = Evidence.point(
        "min over samples of the psi - eta L convexity value",
        Fraction(worst),
        method=Method.SAMPLED,
        detail=f"float64 Hessian eigenvalues at {len(vals)} recorded iterates{where}",
    )
    return HypothesisReport(
        "step_size_measured",
        Verdict.UNDECIDED,
        (ev,),
        f"no violation at {len(vals)} sampled iterates (min {worst:.3g}); samples do not prove it",
    )
