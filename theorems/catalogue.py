"""The theorem catalogue: each theorem as its hypotheses plus the conclusion to be measured.

Source: A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror Descent:
Generalized Max-Margin Token Selection", arXiv:2410.14581 / JMLR 2026 (docs/theory.md section 5). The
conclusions are never assumed here: they are listed with status "to measure" (the training paths
and regularization paths of `experiments` measure them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p
from theorems.context import CheckContext, as_context
from theorems.loss import loss_admissible
from theorems.pgd import PGD_STATEMENT
from theorems.region import init_in_region
from theorems.stepsize import step_size_convex_along_path
from theorems.tokens import (
    joint_svms_feasible,
    svm_feasible,
    tokens_globally_optimal,
    tokens_locally_optimal,
)
from theorems.verdict import HypothesisReport, TheoremReport, Verdict, approx_float

__all__ = [
    "PGD",
    "PGD_SOURCES",
    "PGD_STATEMENT",
    "REFERENCE",
    "Theorem",
    "THEOREMS",
    "check_pgd",
    "check_theorem",
    "get_theorem",
]

# PGD_STATEMENT: the catalogue entry of the p-GD result of arXiv:2205.12808 (a different paper from
# REFERENCE; its predicates live in `theorems.pgd`, docs/theory.md section 7.6; `check_pgd` below
# checks them on a classification problem, run by ``mdcert check --theorem pgd`` and, per p and step
# size, by ``mdcert pgd --check``)

#: the catalogue key of the p-GD result (``mdcert check --theorem pgd``, classification problems)
PGD = "pgd"
#: where each p-GD hypothesis comes from: none is a quoted statement of arXiv:2205.12808
PGD_SOURCES = {
    name: "the literature's standard hypothesis, not a quoted condition of arXiv:2205.12808 "
    "(its text beyond the abstract was not read; docs/theory.md section 7.6)"
    for name in PGD_STATEMENT.hypotheses
}

REFERENCE = "arXiv:2410.14581 / JMLR 2026 (Julistiono, Tarzanagh, Azizan)"

_MD_HYPOTHESES = (
    "loss_admissible",
    "svm_feasible",
    "tokens_locally_optimal",
    "init_in_region",
    "step_size_convex_along_path",
)


@dataclass(frozen=True)
class Theorem:
    """One theorem of the paper.

    Attributes:
        number: label in the paper ("6", "8", "10", "11", "31").
        title: short title.
        hypotheses: predicate names, in the order they are checked.
        conclusion: what the theorem concludes (to be measured, never assumed).
        global_tokens: True when alpha must be the globally optimal tokens ("opt").
    """

    number: str
    title: str
    hypotheses: tuple[str, ...]
    conclusion: str
    global_tokens: bool = False

    @property
    def reference(self) -> str:
        return f"Theorem {self.number}, {REFERENCE}"


THEOREMS: dict[str, Theorem] = {
    "6": Theorem(
        "6",
        "regularization path converges to the l_p max-margin direction (globally optimal tokens)",
        ("loss_admissible", "tokens_globally_optimal", "svm_feasible"),
        "W(R)/R -> W_mm(opt)/||W_mm(opt)||_p as R -> inf, with W(R) = argmin_{||W||_p <= R} L(W); "
        "no initialization condition",
        global_tokens=True,
    ),
    "8": Theorem(
        "8",
        "mirror descent: the norm of W(k) grows to infinity",
        _MD_HYPOTHESES,
        "||W(k)||_p -> inf, of logarithmic order in k",
    ),
    "10": Theorem(
        "10",
        "mirror descent: local directional convergence to the l_p max-margin SVM",
        _MD_HYPOTHESES,
        "D_psi(Wbar_mm, Wbar(k)) -> 0 with Wbar = W/||W||_p",
    ),
    "11": Theorem(
        "11",
        "mirror descent: rate of directional convergence",
        _MD_HYPOTHESES,
        "D_psi(Wbar_mm, Wbar(k)) decays inverse-logarithmically in k, with different expressions for "
        "p < 2, p = 2 and p > 2 (fitted exponent, e.g. D(k) ~ C (log k)^(-a))",
    ),
    "31": Theorem(
        "31",
        "joint regularization path of (W, v) with separate radii",
        ("loss_admissible", "tokens_globally_optimal", "joint_svms_feasible"),
        "(W(R)/R, v(r)/r) -> (W_mm/||W_mm||_p, v_mm/||v_mm||_p); the extra geometric assumption is reported "
        "as measured quantities, not asserted",
        global_tokens=True,
    ),
}


def get_theorem(number: Any) -> Theorem:
    """Look a theorem up by its number (MdcertError for unknown numbers)."""
    key = str(number).strip()
    if key not in THEOREMS:
        raise MdcertError(
            f"unknown theorem {number!r}; choose one of {', '.join(THEOREMS)} (attention problems) "
            f"or {PGD} (the p-GD result, classification problems)"
        )
    return THEOREMS[key]


def _missing(name: str, message: str) -> HypothesisReport:
    return HypothesisReport(name, Verdict.UNDECIDED, (), message)


def check_theorem(
    theorem: Any,
    problem,
    *,
    p: Any,
    alpha: Any = None,
    loss: Any = "logistic",
    W0: Any = None,
    mu: Any = None,
    R: Any = None,
    eta: Any = None,
    trajectory: Any = None,
    digits: int = 30,
    segment: bool = False,
    progress=None,
    step_etas: Any = None,
) -> TheoremReport:
    """Check every hypothesis of a theorem on a problem.

    Args:
        theorem: theorem number ("6", "8", "10", "11", "31").
        problem: an `AttentionProblem` or a `CheckContext`.
        p: exact exponent (decimal string or Fraction).
        alpha: token indices ("opt", list, "0,3,..."); theorems 6 and 31 always use "opt".
        loss: loss name or expression (logistic by default).
        W0: initialization (d, d) for init_in_region (default: ``trajectory[0]`` when given).
        mu, R: the region's admissible radius and norm (inputs; never invented).
        eta: step size of the recorded trajectory (the base step size lr of a normalized one).
        trajectory: float64 iterates (K+1, d, d) of mirror descent with the fixed decoder.
        digits: precision of the certified SVM solves.
        segment: also prove convexity of ``psi - eta L`` on every whole segment of the trajectory.
        step_etas: the K per-step sizes ``lr/||G(W_k)||_q`` of a normalized trajectory (docs/theory.md
            section 2.3), None for constant steps.
        progress: optional callable ``progress(done, total, name)`` told before each hypothesis is
            checked (and ``(total, total, "")`` at the end).

    Returns:
        TheoremReport with one `HypothesisReport` per hypothesis and measured quantities.
    """
    th = get_theorem(theorem)
    ctx: CheckContext = as_context(problem) if not isinstance(problem, CheckContext) else problem
    if not isinstance(problem, CheckContext):
        ctx.digits = int(digits)
    pf = parse_p(p)
    a = ctx.alpha("opt" if th.global_tokens and alpha is None else alpha)
    if W0 is None and trajectory is not None:
        W0 = trajectory[0]
    loss_name = loss if isinstance(loss, str) else str(loss)
    builders = {
        "loss_admissible": lambda: loss_admissible(loss),
        "svm_feasible": lambda: svm_feasible(a),
        "joint_svms_feasible": lambda: joint_svms_feasible(a),
        "tokens_globally_optimal": lambda: tokens_globally_optimal(a),
        "tokens_locally_optimal": lambda: tokens_locally_optimal(a, pf),
        "init_in_region": lambda: None if W0 is None else init_in_region(W0, mu, R, pf, alpha=a),
        "step_size_convex_along_path": lambda: (
            None
            if trajectory is None or eta is None
            else step_size_convex_along_path(
                eta, trajectory, p=pf, loss=loss_name, segment=segment, step_etas=step_etas
            )
        ),
    }
    missing_msg = {
        "init_in_region": "not checked: give an initialization (--init W0.npy) and the region (--mu, --R)",
        "step_size_convex_along_path": "not checked: give --init and --lr to run and record a mirror-descent path",
    }
    reports, timings = [], {}
    for i, name in enumerate(th.hypotheses):
        if progress is not None:
            progress(i, len(th.hypotheses), name)
        t0 = time.perf_counter()
        pred = builders[name]()
        rep = _missing(name, missing_msg[name]) if pred is None else pred.check(ctx)
        timings[name] = round(time.perf_counter() - t0, 4)
        reports.append(rep)
    if progress is not None:
        progress(len(th.hypotheses), len(th.hypotheses), "")
    quantities: dict[str, Any] = {
        "p": format_fraction(pf),
        "alpha": list(a),
        "data_hash": ctx.problem.data_hash(),
        "n": ctx.problem.n,
        "T": ctx.problem.T,
        "d": ctx.problem.d,
        **(
            {}
            if ctx.problem.lengths is None
            else {"lengths": [int(k) for k in ctx.problem.lengths]}
        ),
        "loss": loss_name,
        "mu": None if mu is None else str(mu),
        "R": None if R is None else str(R),
        "eta": None if eta is None else str(eta),
        "steps": None if trajectory is None else int(len(trajectory) - 1),
        "step_rule": None
        if trajectory is None
        else ("normalized" if step_etas is not None else "constant"),
        "seconds": timings,
    }
    if th.global_tokens and reports[-1].verdict is Verdict.HOLDS:
        # the regularization-path theorems converge to W_mm (and v_mm): report their certified norms
        ctx.certificate(pf, svm="attention", alpha=a)
        if "joint_svms_feasible" in th.hypotheses:
            ctx.certificate(pf, svm="decoder", alpha=a)
    for svm in ("attention", "decoder"):
        cert = ctx.computed_certificate(pf, svm=svm, alpha=a)
        if cert is None:
            continue
        if getattr(cert.status, "value", cert.status) == "optimal" and not ctx.checked(
            cert, p=pf, svm=svm, alpha=a
        ):
            quantities[f"{svm}_svm"] = {"status": "rejected by the independent checker"}
            continue
        quantities[f"{svm}_svm"] = {
            "status": getattr(cert.status, "value", str(cert.status)),
            "opt_lower": None if cert.opt_lower is None else format_fraction(cert.opt_lower),
            "opt_upper": None if cert.opt_upper is None else format_fraction(cert.opt_upper),
            "direction_error_upper": None
            if cert.direction_error_upper is None
            else approx_float(cert.direction_error_upper),
            "support_counts": None
            if cert.support is None
            else {k: len(getattr(cert.support, k)) for k in ("tight", "inactive", "undecided")},
            "support_tight": None
            if cert.support is None
            else [list(r) for r in cert.support.tight],
        }
    return TheoremReport(
        th.number, th.title, th.reference, tuple(reports), th.conclusion, quantities
    )


def _max_margin_record(cert, accepted: bool | None) -> dict:
    """The certified l_p max-margin program as the JSON report gives it."""
    status = getattr(cert.status, "value", str(cert.status))
    if accepted is False:
        return {"status": status, "checker": "rejected by the independent checker"}
    return {
        "status": status,
        "checker": None if accepted is None else "accepted",
        "opt_lower": None if cert.opt_lower is None else format_fraction(cert.opt_lower),
        "opt_upper": None if cert.opt_upper is None else format_fraction(cert.opt_upper),
        "direction_error_upper": None
        if cert.direction_error_upper is None
        else approx_float(cert.direction_error_upper),
        "support_counts": None
        if cert.support is None
        else {k: len(getattr(cert.support, k)) for k in ("tight", "inactive", "undecided")},
    }


def check_pgd(
    problem,
    *,
    p: Any,
    loss: str = "logistic",
    certificate: Any = None,
    smoothness: Any = None,
    digits: int = 30,
    path: Mapping[str, Any] | None = None,
) -> TheoremReport:
    """Check the hypotheses of the p-GD result (`PGD_STATEMENT`) on a classification problem.

    Args:
        problem: a `certify.classification.ClassificationProblem`.
        p: exact exponent (decimal string or Fraction).
        loss: "logistic" or "exponential" (other losses are refused by `theorems.pgd`).
        certificate: `certify.certify_max_margin`'s certificate at p, when already computed (else it
            is computed here at ``digits``); the independent checker re-proves it before use.
        smoothness: the relative-smoothness values measured along a p-GD path
            (`experiments.linear.smoothness.smoothness_margins`), None without a path.
        path: JSON-able facts of that path (step size, steps, step rule, what it measured), kept in
            the report's quantities under ``path``.

    Returns:
        TheoremReport (theorem "pgd") with the three hypotheses of `theorems.pgd`; the quantities
        say where each hypothesis comes from (``hypothesis_sources``: the literature's standard
        ones, not quoted conditions).
    """
    from certify import certify_max_margin
    from theorems.pgd import loss_exponential_tail, separable, step_size_measured

    pf = parse_p(p)
    name = getattr(loss, "value", loss)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    loss_rep = loss_exponential_tail(name)
    timings["loss_exponential_tail"] = round(time.perf_counter() - t0, 4)
    t0 = time.perf_counter()
    cert = certificate
    if cert is None:
        cert = certify_max_margin(problem, format_fraction(pf), digits=int(digits))
    accepted = None
    if getattr(cert.status, "value", cert.status) in ("optimal", "infeasible"):
        try:
            from certify import check_certificate
        except ImportError:  # pragma: no cover - the checker ships with certify
            accepted = None
        else:
            res = check_certificate(problem, cert, p=pf, svm=problem.kind)
            accepted = bool(res.ok)
    if accepted is False:
        sep = _missing(
            "separable",
            "the solver's certificate was rejected by the independent checker; nothing is claimed",
        )
    else:
        sep = separable(cert)
    timings["separable"] = round(time.perf_counter() - t0, 4)
    t0 = time.perf_counter()
    if smoothness is None:
        step = _missing(
            "step_size_measured",
            "not checked: give --lr (and --steps, --normalize) to run and record a p-GD path",
        )
    else:
        step = step_size_measured(smoothness)
    timings["step_size_measured"] = round(time.perf_counter() - t0, 4)
    quantities: dict[str, Any] = {
        "p": format_fraction(pf),
        "data_hash": problem.data_hash(),
        "kind": problem.kind,
        "n": problem.n,
        "d": problem.d,
        "K": problem.K,
        "rows": problem.N,
        "variables": problem.m,
        "loss": name,
        "max_margin": _max_margin_record(cert, accepted),
        "hypothesis_sources": dict(PGD_SOURCES),
        "path": None if path is None else dict(path),
        "seconds": timings,
    }
    s = PGD_STATEMENT
    return TheoremReport(
        PGD,
        s.statement,
        f"{s.reference}; hypotheses: the literature's standard ones, not quoted conditions "
        f"(docs/theory.md section 7.6)",
        (sep, loss_rep, step),
        s.conclusion,
        quantities,
    )
