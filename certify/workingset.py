"""Float warm start for constraint-heavy systems, N rows >> m variables (docs/theory.md section 4.5).

Never evidence: the result only seeds `certify.refine`. Two stages, neither of which forms an
N x N or N x m matrix:

1. L-BFGS-B on the smooth psi-form dual ``min_{lam >= 0} (1/q)||A^T lam||_q^q - 1^T lam`` over all
   N rows, with the structured products of `certify.structured` (O(N d + n d^2) per evaluation).
   A few hundred iterations identify most of the active set. With many attention rows the later
   iterations run over a screened subset (`certify.firststage.screened_lbfgs`: the rows with a multiplier and the
   rows of least slack, 8m in all).
2. A working set W of rows (the rows with the largest multipliers, then the nearly active ones,
   at most m of them): projected Newton (`certify.warmstart.projected_newton`) on the dense rows
   ``A_W`` only; then every row is checked (``A w >= 1`` by one structured product), the rows of W
   whose multiplier went to 0 leave it and the most violated rows join it, so that W stays near m
   rows, until no row is violated. The optimum on W with no violated row is the optimum of the
   system; each round keeps the rows with a multiplier and adds violated ones, so the optimum on W
   increases strictly from round to round. A support has at most m rows (generic data), and more
   than m rows with a multiplier make the Newton matrix ``A_F D A_F^T`` (rank <= m) singular: the
   solve then crawls (measured at (10^4,32,64): 12,288 rows did not converge; rounds on 5,000 rows
   took 100-140 s, on 4,100 rows 15-40 s). At p > 2 on N > 8m rows a round solves the primal
   instead (`certify.interior`: an interior point whose normal matrix is m x m, then Newton on the
   rows with a multiplier), so W starts at 2m rows and keeps them (at most 4m).

The dual is unbounded exactly when ``A w >= 1`` is infeasible (Gordan): divergence of stage 1 or a
working set whose Newton solve does not converge is reported with an infinite KKT residual, and
the caller settles feasibility (`certify.feasible`).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import NamedTuple

import numpy as np

from certify.blas import all_cpu_blas, row_gram
from certify.structured import RowFactors
from certify.firststage import dual_gradient, dual_ratio, lbfgs_dual, phi, screened_lbfgs
from certify.interior import interior_bytes, primal_round
from certify.warmstart import WarmStart, smoothed_newton

__all__ = [
    "WorkingSetReport",
    "working_set_start",
    "working_set_bytes",
    "gram_hessian",
    "THREADED_ENTRIES",
    "SAMPLE_FACTOR",
]


class WorkingSetReport(NamedTuple):
    """What the working-set solve did (for the certificate's info)."""

    rounds: int
    rows: int
    lbfgs_iterations: int
    diverged: bool = False  # the dual ran off along a (near-)Gordan direction: likely infeasible


def working_set_bytes(rows: int, m: int) -> int:
    """Float memory of a projected Newton solve on ``rows`` dense rows of length m (rows, their
    scaled copy, the Hessian and its factorization)."""
    return 8 * (3 * rows * m + 3 * rows * rows)


#: plain rows with more than this many times m rows start from a sample of half as many times m
SAMPLE_FACTOR = 8
ROOM = 64
#: attention rows beyond SCREEN_FACTOR m with more than 2 SCREEN_ITER L-BFGS-B iterations: stage 1
#: runs SCREEN_ITER iterations over all rows, the rest over a screened subset (`certify.firststage.screened_lbfgs`)
SCREEN_FACTOR = 8
SCREEN_ITER = 300

#: dense working sets of at least this many entries rows * m run their Newton steps on every usable
#: CPU (one BLAS thread spin-waits on small matrices, see `certify.blas`; not on these)
THREADED_ENTRIES = 4_000_000


def _blas_threads(entries: int):
    """All usable CPUs for BLAS on a big dense working set, else no change (a context manager)."""
    return all_cpu_blas() if entries >= THREADED_ENTRIES else nullcontext()


def gram_hessian(A: np.ndarray):
    """For q = 2: ``hess(wt, F)`` of `certify.warmstart.newton_direction` from one Gram matrix
    ``G = A A^T`` formed once (dsyrk), so a Newton step costs a |F| x |F| copy and a Cholesky instead
    of |F|^2 m products. The weights are |u|^0 = 1 except where an entry of u is exactly 0; then the
    product is formed from the rows."""
    G = row_gram(A, full=True)

    def hess(wt: np.ndarray, F: np.ndarray) -> np.ndarray:
        if np.all(wt == 1.0):
            return G[np.ix_(F, F)]
        X = A[F] * np.sqrt(wt)
        return X @ X.T

    hess.gram = G  # `certify.lagged.gram_updated_solve` solves with it directly
    return hess


def _independent(A: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Sorted positions of a linearly independent subset of the rows of A (numerical rank with a
    relative tolerance of 1e-9), chosen by QR with column pivoting on the rows weighted by
    ``1 + lam / max(lam)`` (the larger multipliers first among rows of similar norm)."""
    import scipy.linalg as sla

    top = float(lam.max()) if lam.size and lam.max() > 0 else 1.0
    Bw = A * (1.0 + np.maximum(lam, 0.0) / top)[:, None]
    R, piv = sla.qr(Bw.T, mode="r", pivoting=True, check_finite=False)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > 1e-9 * diag[0])) if diag.size and diag[0] > 0 else 0
    return np.sort(piv[:rank])


def _p2_divergence(rf, q, sigma, lam, nit, N, rows, what):
    """At p != 2, a stage-1 dual ``lam`` of the rows ``rf`` (``rows`` of the N, or all of them
    when None) still far from an optimum (`certify.firststage.dual_ratio` at most 1/2, 1 at an
    optimum): feasibility does not depend on p and the p = 2 dual diverges fastest, so SCREEN_ITER
    of its iterations are run. A diverging one gives the result of `working_set_start` (likely
    infeasible; lam its direction, length N); else None."""
    if q == 2.0 or dual_ratio(rf, q, sigma, lam) > 0.5:
        return None
    lam2, nit2 = lbfgs_dual(rf, 2.0, sigma, SCREEN_ITER)
    r2 = dual_ratio(rf, 2.0, sigma, lam2)
    if r2 > 1e-6:
        return None
    if rows is not None:
        full = np.zeros(N)
        full[rows] = lam2
        lam2 = full
    why = f"the p = 2 dual of {what} diverges (ratio {r2:.1e})"
    return (
        WarmStart(lam2, np.zeros(rf.m), f"working set ({why}): likely infeasible", math.inf),
        WorkingSetReport(0, 0, nit + nit2, True),
    )


def _dual_newton(A: np.ndarray, q: float, lam: np.ndarray, tol: float, *, retry: bool):
    """The dual Newton solve of a round at q >= 2 (`certify.warmstart.smoothed_newton`); ``retry``:
    when it fails, again with the null-space steps (`certify.warmstart.null_steps`, an SVD per
    step; text features of rank 382 in 384 columns, 432 rows, needed them after the independent
    subsets of `_rounds` did not settle it). Returns (lam, KKT residual)."""
    hess = gram_hessian(A) if q == 2.0 else None
    out, res = smoothed_newton(A, q, lam, tol=tol, hess=hess)
    if retry and not (res < 1e-6 and np.all(np.isfinite(out))):
        lam2, res2 = smoothed_newton(A, q, lam, tol=tol, hess=hess, dependent=True)
        if res2 < res or not np.all(np.isfinite(out)):
            out, res = lam2, res2
    return out, res


def _kkt_full(rf: RowFactors, q: float, sigma: float, lam: np.ndarray) -> float:
    g = dual_gradient(rf, q, sigma, lam)
    on = lam > 0
    r1 = float(np.max(np.abs(g[on]))) if on.any() else 1.0
    return max(r1, float(np.max(np.maximum(-g, 0.0))))


@np.errstate(over="ignore", invalid="ignore")
def working_set_start(
    rf: RowFactors,
    p: float,
    *,
    tol: float = 1e-12,
    max_rounds: int = 40,
    lbfgs_iter: int | None = None,
    max_rows: int | None = None,
    budget_bytes: int | None = None,
    sample: bool = False,
) -> tuple[WarmStart, WorkingSetReport]:
    """Float dual/primal estimate for ``min ||w||_p s.t. A w >= 1`` from structured rows.

    Args:
        rf: the float factors of the rows.
        p: exponent (float; the certified p is the exact one used later).
        tol: KKT tolerance of the Newton solves.
        max_rounds: working-set rounds before giving up.
        lbfgs_iter: L-BFGS-B iterations of stage 1 (default ``N / 200`` within [300, 2000]: at
            (10^4,32,64), 300 iterations leave 8,700 rows with a multiplier for a support of 4,061,
            1,500 leave 4,600).
        max_rows: most rows a working set may hold (default: 3m, or fewer if ``budget_bytes`` says so).
        budget_bytes: memory for the dense working-set rows (default 2 GiB).
        sample: plain rows (binary classification) with N > `SAMPLE_FACTOR` m: stage 1 runs on a
            seeded sample of `SAMPLE_FACTOR` // 2 * m rows instead of all N (the working-set rounds
            then add the violated rows of all N; measured at (20,000, 256): 300 L-BFGS-B iterations
            over all rows took 3.2 s of 10.5); when that path gives up without a diverging
            dual, the full stage 1 runs after all. A diverging sample is a Gordan direction of
            the system as well (zero off the sample).

    Returns:
        (`WarmStart` with lam of length N, `WorkingSetReport`). ``kkt_residual`` is infinite when
        the dual diverged (the system is then likely infeasible; lam is then the L-BFGS-B iterate,
        whose direction is nearly a Gordan vector, see `certify.gordan`) or a working set grew too large.
    """
    q = p / (p - 1.0)
    N, m = rf.N, rf.m
    lbfgs_iter = max(300, min(2000, N // 200)) if lbfgs_iter is None else int(lbfgs_iter)
    budget = 2 << 30 if budget_bytes is None else int(budget_bytes)
    # p > 2 on many rows: the rounds solve the primal (`certify.interior`), whose normal matrix is
    # m x m; on fewer the support stays well below m and the dual's |F| x |F| matrix is the cheaper
    # one (p = 3, dual / interior point, load 1-2: (100,32,64) 6.1 / 14.5 s, (500,32,64) 19.0 /
    # 25.2 s, (2000,32,64) 50-132 / 38.9 s, (10^4,32,64) no result / 211-244 s)
    primal = q < 2.0 and N > SCREEN_FACTOR * m
    # the interior point's memory does not grow as rows^2: it may hold 4m rows, the dual 3m
    cap = min(N, (4 if primal else 3) * m) if max_rows is None else min(N, max_rows)
    size = interior_bytes if primal else working_set_bytes
    while cap > 1 and size(cap, m) > budget:
        cap = int(cap * 0.9)
    # rows a round aims at: a (generic) support and a margin of violators; the interior point:
    # twice m, as its normal matrix is m x m whatever the rows (the dual Newton matrix A_F D A_F^T,
    # rank <= m, is singular beyond m free rows: measured at (10^4,32,64) p = 3, dual rounds of at
    # most m rows converged but the support grew some 10 rows a round)
    target = min(cap, 2 * m if primal else m if q < 2.0 else m + m // 8)
    norms = rf.row_norms()
    sigma = float(np.median(norms))
    sigma = sigma if sigma > 0 and math.isfinite(sigma) else 1.0

    sampled = sample and rf.right is None and N > SAMPLE_FACTOR * m
    if sampled and q < 2.0:
        # p > 2: a homotopy from p = 2, whose rounds are cheap (one Gram matrix, no cusp); the p
        # rounds then start from its multipliers (measured at (20,000, 256), p = 3: 36 + 15 rounds
        # took 4.7 s CPU against 37 rounds from the sample at p = 3, 5.6 s)
        ws2, rep2 = working_set_start(
            rf,
            2.0,
            tol=tol,
            max_rounds=max_rounds,
            max_rows=max_rows,
            budget_bytes=budget_bytes,
            sample=True,
        )
        if rep2.diverged:
            return ws2, rep2  # feasibility does not depend on p: the near-Gordan direction stands
        if ws2.kkt_residual < 1e-6:
            v = ws2.lam * sigma**2  # the p = 2 multipliers on the rows / sigma
            top = float(np.sum(np.abs(rf.rmatvec(v) / sigma) ** q))
            if top > 0 and math.isfinite(top):
                v = v * (float(v.sum()) / top) ** (1.0 / (q - 1.0))  # best multiple at this q
                ws, rep = _rounds(
                    rf, p, q, v, rep2.lbfgs_iterations, sigma, tol, max_rounds, cap, target, primal
                )
                if ws.kkt_residual < math.inf:
                    return ws._replace(method=ws.method + ", from the p = 2 optimum"), rep._replace(
                        rounds=rep2.rounds + rep.rounds
                    )
    if sampled:
        rows = np.sort(
            np.random.default_rng(0).choice(N, size=SAMPLE_FACTOR // 2 * m, replace=False)
        )
        sub = RowFactors(rf.kind, rf.d, rf.left[rows])
        lam_s, nit = lbfgs_dual(sub, q, sigma, 300)
        # (random labels at p = 1.5: the q = 3 sample dual had not diverged after 300 iterations,
        # the rounds then ran in vain)
        found = _p2_divergence(sub, q, sigma, lam_s, nit, N, rows, f"a {len(rows)}-row sample")
        if found is not None:
            return found
        lam = np.zeros(N)
        lam[rows] = lam_s
    elif rf.right is not None and N > SCREEN_FACTOR * m:
        # the first SCREEN_ITER iterations over all rows; at p != 2 a dual still far from an
        # optimum (ratio 1) then tries the p = 2 dual, which diverges fastest where the system is
        # infeasible (random (10^4,32,64) at p = 1.75: over 12 minutes of stage 1 and rounds on an
        # infeasible system before the p = 2 fallback of `certify.solve`)
        lam, nit = lbfgs_dual(rf, q, sigma, min(lbfgs_iter, SCREEN_ITER))
        found = _p2_divergence(rf, q, sigma, lam, nit, N, None, f"all {N} rows")
        if found is not None:
            return found
        if lbfgs_iter > 2 * SCREEN_ITER:
            lam, nit = screened_lbfgs(
                rf, q, sigma, lbfgs_iter, factor=SCREEN_FACTOR, first=SCREEN_ITER, start=(lam, nit)
            )
        elif lbfgs_iter > SCREEN_ITER:
            lam2, nit2 = lbfgs_dual(rf, q, sigma, lbfgs_iter - SCREEN_ITER, x0=lam)
            lam, nit = lam2, nit + nit2
    else:
        lam, nit = lbfgs_dual(rf, q, sigma, lbfgs_iter)
    ws, rep = _rounds(rf, p, q, lam, nit, sigma, tol, max_rounds, cap, target, primal)
    if sampled and not ws.kkt_residual < math.inf and not rep.diverged:
        return working_set_start(
            rf,
            p,
            tol=tol,
            max_rounds=max_rounds,
            lbfgs_iter=lbfgs_iter,
            max_rows=max_rows,
            budget_bytes=budget_bytes,
            sample=False,
        )
    return ws, rep


def _rounds(rf, p, q, lam, nit, sigma, tol, max_rounds, cap, target, primal):
    """The working-set rounds of `working_set_start` from the stage-1 multipliers ``lam``."""
    N, m = rf.N, rf.m

    def give_up(lam, rounds, rows, nit, why, diverged=False):
        return (
            WarmStart(lam / sigma**p, np.zeros(m), f"working set ({why})", math.inf),
            WorkingSetReport(rounds, rows, nit, diverged),
        )

    if not np.all(np.isfinite(lam)) or not lam.any():
        return give_up(np.zeros(N), 0, 0, nit, "dual diverged")
    # at a dual optimum ||A^T lam||_q^q = 1^T lam (KKT); along a Gordan direction the ratio tends to 0
    ratio = dual_ratio(rf, q, sigma, lam)
    if not ratio > 1e-6:
        return give_up(
            lam,
            0,
            0,
            nit,
            f"dual diverges (||A^T lam||_q^q / 1^T lam = {ratio:.1e}): likely infeasible",
            diverged=True,
        )
    g = dual_gradient(rf, q, sigma, lam)
    on = lam > 1e-8 * float(lam.max())
    order = np.lexsort(
        (g, -np.where(on, lam, 0.0))
    )  # the largest multipliers first, then by gradient
    want = int(np.sum(on)) + int(np.sum((g < 0.05) & ~on))
    W = np.sort(order[: max(1, min(target, want))])
    lamW = np.where(on[W], lam[W], 0.0)
    inW = np.zeros(N, dtype=bool)
    shrinks = 0
    for rounds in range(1, max_rounds + 1):
        inW[:] = False
        inW[W] = True
        A = rf.rows(W) / sigma
        start = lamW
        with _blas_threads(A.size):
            if primal:
                lamW, res = primal_round(A, p, lamW, tol=tol)
            else:
                lamW, res = _dual_newton(A, q, lamW, tol, retry=shrinks >= 3)
        if not (res < 1e-6 and np.all(np.isfinite(lamW))):
            if shrinks < 3 and not np.all(inW):
                # more rows with a multiplier than the rank of A_W (dependent rows: always-zero
                # features, the shift W + 1 c^T of Crammer-Singer rows): keep a well-conditioned,
                # linearly independent subset, the largest starting multipliers first (QR with
                # column pivoting); the violated rows rejoin in the next rounds
                shrinks += 1
                keep = _independent(A, start)
                if len(keep) < len(W):
                    W, lamW = W[keep], start[keep]
                    continue
            return give_up(
                np.zeros(N),
                rounds,
                len(W),
                nit,
                f"Newton on {len(W)} rows did not converge, KKT {res:.1e}",
            )
        w = phi(A.T @ lamW, q)
        slack = rf.matvec(w) / sigma - 1.0
        viol = np.flatnonzero((slack < -max(tol, 1e-10)) & ~inW)
        if not len(viol):
            lam = np.zeros(N)
            lam[W] = lamW
            lam_out = lam / sigma**p
            w_out = phi(rf.rmatvec(lam_out), q)
            return (
                WarmStart(
                    lam_out,
                    w_out,
                    f"structured L-BFGS-B dual + working-set Newton ({rounds} rounds, "
                    f"{len(W)} of {N} rows)",
                    _kkt_full(rf, q, sigma, lam),
                ),
                WorkingSetReport(rounds, len(W), nit),
            )
        if primal:
            # the interior point costs |W| m^2 a step whatever the support: W keeps its rows
            # without a multiplier too (dropping them let rows leave and rejoin: 14 rounds on
            # 1,200 rows of m = 36), the rows of most slack leave only to make room for violators
            keep = np.ones(len(W), dtype=bool)
            spare = cap - len(W)
            if spare < min(len(viol), ROOM):
                out = np.flatnonzero(lamW == 0)
                out = out[np.argsort(-slack[W[out]])][: min(len(viol), ROOM) - spare]
                keep[out] = False
            room = cap - int(keep.sum())
        else:
            keep = lamW > 0  # rows without a multiplier leave W: the optimum on W stays
            room = min(cap - int(keep.sum()), max(target - int(keep.sum()), ROOM))
            if q < 2.0:  # the dual at p > 2: within m rows (see ``target``)
                room = max(1, min(room, target - int(keep.sum())))
        if room <= 0:
            return give_up(np.zeros(N), rounds, len(W), nit, f"working set would exceed {cap} rows")
        add = viol[np.argsort(slack[viol])[:room]]
        W, lamW = np.concatenate([W[keep], add]), np.concatenate([lamW[keep], np.zeros(len(add))])
        o = np.argsort(W)
        W, lamW = W[o], lamW[o]
    return give_up(np.zeros(N), max_rounds, len(W), nit, f"no convergence in {max_rounds} rounds")
