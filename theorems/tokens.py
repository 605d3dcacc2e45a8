"""Token hypotheses: SVM feasibility, global and local optimality of alpha (docs/theory.md sections 3-5).

Every verdict is re-derived here from exact integer arithmetic on the data: a feasible point is
accepted only when ``min_r a_r^T w > 0`` holds exactly, a Gordan vector only when ``A^T g = 0``
holds exactly; token scores ``gamma_it = y_i v^T x_it`` are exact. Local optimality uses the
certified support classification of `certify.certify_svm` (after the independent checker accepts
the certificate): the minimum score gap over the true support set is enclosed by the gaps over
the certainly-tight rows and over the tight-or-undecided rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from certify.exact import format_exact, parse_p
from theorems.context import CheckContext, Predicate, as_context
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict
from theorems.exactpoint import exact_vector, verify_gordan, verify_point

__all__ = [
    "SvmFeasible",
    "JointSvmsFeasible",
    "TokensGloballyOptimal",
    "TokensLocallyOptimal",
    "svm_feasible",
    "decoder_svm_feasible",
    "joint_svms_feasible",
    "tokens_globally_optimal",
    "tokens_locally_optimal",
    "exact_vector",
    "verify_point",
    "verify_gordan",
]


def _feasibility_evidence(
    ctx: CheckContext, svm: str, alpha: tuple[int, ...]
) -> tuple[Evidence, bool | None]:
    """Exact evidence of feasibility (point) or infeasibility (Gordan vector), from certify's results."""
    system = ctx.constraints(svm=svm, alpha=alpha)
    res = None
    try:
        res = ctx.feasibility(svm=svm, alpha=alpha)
    except ImportError:
        res = None
    point = gordan = None
    if res is not None:
        point = getattr(res, "point_exact", None) or getattr(res, "point", None)
        gordan = getattr(res, "gordan_exact", None) or getattr(res, "gordan", None)
    label = f"{svm} SVM, alpha={list(alpha)}"
    if point is not None:
        margin = verify_point(system, point)
        if margin is not None and margin > 0:
            return Evidence.point(
                f"min_r a_r^T w for an exact point w ({label})",
                margin,
                method=Method.EXACT,
                relation=">",
                threshold=0,
                detail="exact integer product of the data rows with a certified point",
            ), True
    if gordan is not None:
        ok, resid, data = verify_gordan(system, gordan)
        if ok:
            return Evidence.point(
                f"max_j |(A^T g)_j| / 1^T g for a Gordan vector g >= 0 ({label})",
                resid,
                method=Method.EXACT,
                relation=">",
                threshold=0,
                detail="exact: A^T g = 0 with g >= 0, g != 0, so 0 is in conv{a_r} (Gordan)",
                data={"gordan": data},
            ), False
    # deciding but unbounded: keeps a Kleene AND of several requirements UNDECIDED
    return Evidence(
        f"min_r a_r^T w for a feasible point w ({label})",
        None,
        None,
        Method.SOLVER,
        ">",
        Fraction(0),
        detail="certify gave neither an exactly valid point nor an exact Gordan vector",
    ), None


# ---------------------------------------------------------------------- predicates
@dataclass(frozen=True)
class SvmFeasible(Predicate):
    """The attention (or decoder) SVM of alpha is feasible (docs/theory.md sections 3 and 5.2). Feasibility does not
    depend on p. Infeasible FAILS with an exactly checked Gordan vector as evidence."""

    alpha: Any = None
    svm: str = "attention"

    @property
    def name(self) -> str:  # type: ignore[override]
        return "svm_feasible" if self.svm == "attention" else "decoder_svm_feasible"

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        alpha = ctx.alpha(self.alpha)
        ev, _ = _feasibility_evidence(ctx, self.svm, alpha)
        what = "attention" if self.svm == "attention" else "decoder"
        return HypothesisReport.from_evidence(
            self.name,
            [ev],
            holds=f"the {what} SVM for alpha={list(alpha)} is feasible (exact point)",
            fails=f"the {what} SVM for alpha={list(alpha)} is infeasible (exact Gordan certificate); "
            f"choose other token indices alpha",
            undecided=f"feasibility of the {what} SVM was not proved either way; retry with a longer time limit",
        )


@dataclass(frozen=True)
class JointSvmsFeasible(Predicate):
    """Joint training (Theorem 31): the attention SVM and the decoder SVM of alpha are both feasible
    (docs/theory.md section 5.2)."""

    alpha: Any = None
    name = "joint_svms_feasible"

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        alpha = ctx.alpha(self.alpha)
        ev_a, _ = _feasibility_evidence(ctx, "attention", alpha)
        ev_d, _ = _feasibility_evidence(ctx, "decoder", alpha)
        return HypothesisReport.from_evidence(
            self.name,
            [ev_a, ev_d],
            holds=f"attention and decoder SVMs for alpha={list(alpha)} are both feasible (exact points)",
            fails="at least one of the attention / decoder SVMs is infeasible (exact Gordan certificate); "
            "choose other alpha or data",
            undecided="feasibility of one of the SVMs was not proved either way",
        )


def _score_gaps(ctx: CheckContext, alpha: tuple[int, ...]) -> tuple[np.ndarray, Fraction]:
    """Exact ``gamma_{i alpha_i} - gamma_it`` as integers (n, T) and the common scale."""
    gamma, exp = ctx.problem.token_scores_exact()
    ga = np.array([gamma[i, a] for i, a in enumerate(alpha)], dtype=object)
    return ga[:, None] - gamma, Fraction(2) ** exp


@dataclass(frozen=True)
class TokensGloballyOptimal(Predicate):
    """alpha_i is the unique argmax of the exact token scores in every example (ties FAIL;
    docs/theory.md section 5.3)."""

    alpha: Any = None
    name = "tokens_globally_optimal"

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        alpha = ctx.alpha(self.alpha)
        gaps, scale = _score_gaps(ctx, alpha)
        worst, where = None, None
        L = ctx.problem.valid_lengths  # padding tokens t >= L[i] compete with nobody
        for i, a in enumerate(alpha):
            for t in range(int(L[i])):
                if t != a and (worst is None or gaps[i, t] < worst):
                    worst, where = gaps[i, t], (i, t)
        value = Fraction(int(worst)) * scale
        ties = [
            (i, t)
            for i, a in enumerate(alpha)
            for t in range(int(L[i]))
            if t != a and gaps[i, t] == 0
        ]
        ev = Evidence.point(
            "min_i (gamma_{i,alpha_i} - max_{t != alpha_i} gamma_it)",
            value,
            method=Method.EXACT,
            relation=">",
            threshold=0,
            detail="exact token scores y_i v^T x_it",
            data={"argmin": list(where), "ties": [list(r) for r in ties]},
        )
        if ties:
            fails = (
                f"exact score tie in example {ties[0][0]} between tokens {alpha[ties[0][0]]} and {ties[0][1]}; "
                f"the optimal token is not unique - break the tie in the data"
            )
        else:
            i, t = where
            fails = (
                f"alpha is not globally optimal: in example {i} token {t} scores higher than alpha_i={alpha[i]}; "
                f"use --alpha opt"
            )
        return HypothesisReport.from_evidence(
            self.name,
            [ev],
            holds=f"alpha={list(alpha)} is the unique argmax of the exact token scores",
            fails=fails,
            undecided="",
        )


@dataclass(frozen=True)
class TokensLocallyOptimal(Predicate):
    """alpha is locally optimal for the l_p attention SVM (docs/theory.md sections 3.3 and 5.3): the SVM is feasible and
    ``gamma_{i alpha_i} > gamma_it`` for every support token ``t in T_i``."""

    alpha: Any = None
    p: Any = 2
    name = "tokens_locally_optimal"

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        alpha = ctx.alpha(self.alpha)
        p = parse_p(self.p)
        feas_ev, feasible = _feasibility_evidence(ctx, "attention", alpha)
        if feasible is False:
            return HypothesisReport(
                self.name,
                Verdict.FAILS,
                (feas_ev,),
                f"the attention SVM for alpha={list(alpha)} is infeasible (exact Gordan "
                f"certificate), so alpha is not locally optimal; choose other tokens",
            )
        cert = ctx.certificate(p, svm="attention", alpha=alpha)
        status = getattr(cert.status, "value", cert.status)
        checked = (
            ctx.checked(cert, p=p, svm="attention", alpha=alpha) if status == "optimal" else None
        )
        if status != "optimal" or cert.support is None or checked is not True:
            why = (
                "the certificate failed the independent checker"
                if status == "optimal"
                else f"no verified SVM solution (status {status})"
            )
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                (
                    Evidence(
                        f"support set of the l_p SVM, p={format_exact(p)}",
                        None,
                        None,
                        Method.SOLVER,
                        detail=why,
                    ),
                ),
                f"{why}; retry with more digits or a longer time limit",
            )
        gaps, scale = _score_gaps(ctx, alpha)
        tight = [tuple(r) for r in cert.support.tight]
        undecided = [tuple(r) for r in cert.support.undecided]
        maybe = tight + undecided
        if not maybe:
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                (
                    Evidence(
                        "support set",
                        None,
                        None,
                        Method.SOLVER,
                        detail="certificate lists no possible support row",
                    ),
                ),
                "the certificate classifies every row inactive, which cannot be; report this",
            )

        def gap(r):
            return Fraction(int(gaps[r[0], r[1]])) * scale

        lo = min(gap(r) for r in maybe)
        # the true support S satisfies tight <= S <= tight + undecided and S is non-empty
        hi = min(gap(r) for r in tight) if tight else max(gap(r) for r in undecided)
        bad_tight = [list(r) for r in tight if gap(r) <= 0]
        bad_und = [list(r) for r in undecided if gap(r) <= 0]
        ev = Evidence(
            f"min over support tokens (i,t) of gamma_{{i,alpha_i}} - gamma_it (p={format_exact(p)})",
            lo,
            hi,
            Method.INTERVAL,
            ">",
            Fraction(0),
            detail="exact scores; support set enclosed by the certified tight and tight-or-undecided rows",
            data={
                "tight": [list(r) for r in tight],
                "undecided": [list(r) for r in undecided],
                "tight_violating": bad_tight,
                "undecided_violating": bad_und,
            },
        )
        if bad_tight:
            i, t = bad_tight[0]
            fails = (
                f"support token {t} of example {i} scores >= alpha_{i}={alpha[i]} (certified tight row), so "
                f"alpha is not locally optimal; use --alpha opt or another alpha"
            )
        else:
            fails = "alpha is not locally optimal"
        return HypothesisReport.from_evidence(
            self.name,
            [ev],
            holds=f"alpha={list(alpha)} is locally optimal for p={format_exact(p)} "
            f"({len(tight)} certified support rows, {len(undecided)} undecided but harmless)",
            fails=fails,
            undecided=f"rows {bad_und[:3]} may be support rows (undecided, e.g. weakly active) and score >= alpha; "
            f"certify with more digits or perturb the data",
        )


# ---------------------------------------------------------------------- factory functions
def svm_feasible(alpha: Any = None) -> SvmFeasible:
    """Predicate: the attention SVM of alpha is feasible."""
    return SvmFeasible(alpha=alpha, svm="attention")


def decoder_svm_feasible(alpha: Any = None) -> SvmFeasible:
    """Predicate: the decoder SVM ``y_i x_{i alpha_i}^T v >= 1`` is feasible."""
    return SvmFeasible(alpha=alpha, svm="decoder")


def joint_svms_feasible(alpha: Any = None) -> JointSvmsFeasible:
    """Predicate: attention and decoder SVMs are both feasible (joint training, Theorem 31)."""
    return JointSvmsFeasible(alpha=alpha)


def tokens_globally_optimal(alpha: Any = None) -> TokensGloballyOptimal:
    """Predicate: alpha is the unique exact argmax of the token scores."""
    return TokensGloballyOptimal(alpha=alpha)


def tokens_locally_optimal(alpha: Any = None, p: Any = 2) -> TokensLocallyOptimal:
    """Predicate: alpha is locally optimal for the l_p attention SVM."""
    return TokensLocallyOptimal(alpha=alpha, p=p)
