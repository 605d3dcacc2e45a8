"""`certify_max_margin`: the certified l_p max-margin classifier of a classification problem
(docs/theory.md section 7).

``OPT = min ||w||_p s.t. A w >= 1`` with the rows of `ClassificationProblem.constraints` (binary
``y_i x_i``; multiclass Crammer-Singer ``vec((e_{y_i} - e_k) x_i^T)``, k != y_i). The program is the
decoder SVM's (plain rows, m = d or K d variables), so the certified pipeline of `certify.svm`
proves it; the rows always take the working-set warm start (`certify.workingset`): with n >> d
the float work holds the N x m rows and a working set of about m rows, never an N x N matrix.

Two exact shortcuts come first, each a Gordan certificate (status INFEASIBLE) of two or one
entries that the checker re-proves: two equal points with different labels (their rows sum to 0)
and a zero point (a zero row). A non-separable problem without them is proved infeasible by the
pipeline (an exact or a basis-verified near-Gordan vector), or answered NO_VERIFIED_RESULT.
"""

from __future__ import annotations

import time

import numpy as np

from certify.blas import single_thread_blas
from certify.budget import plain_solve_bytes
from certify.certificate import Certificate, CertStatus, ExactVector
from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.exact import parse_p
from certify.svm import certify_system

__all__ = ["certify_max_margin", "conflict_gordan"]


def conflict_gordan(problem: ClassificationProblem) -> tuple[ExactVector, str] | None:
    """An exact Gordan vector (g >= 0, sum g = 1, A^T g = 0) from a zero point or two equal points
    with different labels, and a one-line reason; None when there is neither."""
    index = problem.row_index()
    pos = {r: k for k, r in enumerate(index)}
    zero = np.flatnonzero(~np.any(problem.X != 0, axis=1))
    g = [0] * len(index)
    if zero.size:
        i = int(zero[0])
        r = (
            (i,)
            if problem.classes is None
            else (i, next(k for k in range(problem.K) if k != int(problem.y[i])))
        )
        g[pos[r]] = 1
        return ExactVector(
            tuple(g), 0, 1
        ), f"example {i} is the zero point (its constraint row is 0)"
    pair = problem.conflicting_pair()
    if pair is None:
        return None
    i, j = pair
    yi, yj = int(problem.y[i]), int(problem.y[j])
    rows = (
        [(i,), (j,)] if problem.classes is None else [(i, yj), (j, yi)]
    )  # (e_yi - e_yj) x + (e_yj - e_yi) x = 0
    for r in rows:
        g[pos[r]] = 1
    return ExactVector(tuple(g), 0, 2), (
        f"examples {i} and {j} are the same point with labels {yi} and {yj}: "
        f"no classifier separates them"
    )


def certify_max_margin(
    problem: ClassificationProblem,
    p,
    *,
    digits: int = 60,
    time_limit: float | None = None,
    memory_budget: int | None = None,
    progress=None,
) -> Certificate:
    """Certified l_p max-margin classifier (docs/theory.md section 7).

    Args:
        problem: the labelled data.
        p: exponent (exact, see `certify.exact.parse_p`).
        digits, time_limit, memory_budget, progress: as for `certify.svm.certify_svm`.

    Returns:
        A `Certificate` with ``svm`` "binary" (w of length d) or "multiclass" (W, K x d row-major,
        length K d), ``alpha`` empty, ``d`` the number of features: OPTIMAL (enclosure of OPT,
        direction and Bregman bounds, support examples), INFEASIBLE (Gordan certificate: the data
        are not separable) or NO_VERIFIED_RESULT.
    """
    if not isinstance(problem, ClassificationProblem):
        raise MdcertError(
            f"certify_max_margin needs a ClassificationProblem, got {type(problem).__name__}"
        )
    t0 = time.perf_counter()
    pf = parse_p(p)
    if (
        isinstance(digits, bool)
        or not isinstance(digits, (int, np.integer))
        or not 1 <= digits <= 2000
    ):
        raise MdcertError(f"invalid digits {digits!r}; give an integer between 1 and 2000")
    short = conflict_gordan(problem)
    if short is not None:
        g, why = short
        return Certificate(
            status=CertStatus.INFEASIBLE,
            svm=problem.kind,
            p=pf,
            alpha=(),
            data_hash=problem.data_hash(),
            d=problem.d,
            digits=int(digits),
            gordan=g,
            info={"feasibility": why, "seconds": round(time.perf_counter() - t0, 4)},
        )
    N, m = problem.N, problem.m
    need = plain_solve_bytes(N=N, m=m)  # int64 exact rows, float copies, working sets
    with single_thread_blas():  # small dense BLAS calls: a second spinning thread only costs time
        cert = certify_system(
            problem.constraints,
            pf,
            svm=problem.kind,
            data_hash=problem.data_hash(),
            d=problem.d,
            N=N,
            m=m,
            need=need,
            structured=True,
            digits=digits,
            time_limit=time_limit,
            memory_budget=memory_budget,
            progress=progress,
            sample=problem.classes is None,  # binary rows; Crammer-Singer rows are dependent and
            # the sampled start gave up on digits (the full one then ran after all: 2x slower)
        )
    return cert.with_info(seconds_total=round(time.perf_counter() - t0, 4))
