"""High-precision Newton refinement on the reduced dual system (docs/theory.md section 4, last item).

Solve ``G(lam_S) = A_S phi(A_S^T lam_S) - 1 = 0`` for the multipliers on the active set S, with
``phi(u) = sign(u)|u|^{q-1}``. Mixed precision: ``lam_S`` is a fixed-point integer vector, the
products ``Z^T lam`` and ``Z w`` are exact (python-flint), ``phi`` is evaluated in arb at the
working precision, and the correction solves a float64 Jacobian system
``(q-1) A_S diag(|u|^{q-2}) A_S^T`` (10-15 digits gained per step). The active set is updated
(negative multipliers dropped, violated rows added) until the KKT system holds. The result is only
a candidate: `certify.bounds` proves what it is worth.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from fractions import Fraction
from typing import NamedTuple

import flint
import numpy as np

from certify.blas import all_cpu_blas, row_gram
from certify.ops import ExactOps, float_to_fixed, int_vector_to_float
from certify.warmstart import hessian_weights

__all__ = ["Refined", "refine", "phi_fixed"]


class Refined(NamedTuple):
    """Candidate optimum: ``lam = lam_ints * 2**lam_exp`` (length N, zero off S),
    ``w = w_ints * 2**w_exp = phi(A^T lam)`` (length m)."""

    lam_ints: list[int]
    lam_exp: int
    w_ints: list[int]
    w_exp: int
    support: tuple[int, ...]
    residual: float
    converged: bool
    iterations: int
    residual_log2: float = float(
        "-inf"
    )  # log2 of the max residual (``residual`` underflows below 1e-308)


def _arb_to_fixed(x, e: int) -> int:
    """Round the midpoint of arb ``x`` to the nearest integer multiple of ``2**e``; returns the integer."""
    man, ex = x.mid().man_exp()
    man, ex = int(man), int(ex)
    s = ex - e
    if s >= 0:
        return man << s
    return (man + (1 << (-s - 1))) >> (-s)


def phi_fixed(U: list[int], u_exp: int, q: Fraction, bits: int) -> tuple[list[int], int]:
    """``phi(u)`` for ``u = U * 2**u_exp`` as fixed-point integers ``W * 2**w_exp`` (relative ~2**-bits)."""
    nz = [k for k in U if k]
    if not nz:
        return [0] * len(U), 0
    with flint.ctx.workprec(max(bits + 40, 53)):
        return _phi_fixed(U, u_exp, q, bits, nz)


def _phi_fixed(U, u_exp, q, bits, nz):
    from flint import arb, fmpq

    qm1 = arb(fmpq((q - 1).numerator, (q - 1).denominator))
    big = max(abs(k).bit_length() for k in nz)
    # u = (U / 2**big) * 2**(big + u_exp); |U / 2**big| <= 1
    scale = arb(2) ** ((big + u_exp) * qm1)
    two = arb(2) ** (-big)
    vals = [(arb(abs(k)) * two) ** qm1 if k else None for k in U]
    mx = max(v.mid() for v in vals if v is not None) * scale.mid()
    man, ex = arb(mx).mid().man_exp()
    w_exp = abs(int(man)).bit_length() + int(ex) - 1 - bits
    out = []
    for k, v in zip(U, vals):
        if v is None:
            out.append(0)
        else:
            r = _arb_to_fixed(v * scale, w_exp)
            out.append(r if k > 0 else -r)
    return out, w_exp


#: dense Jacobians from the float rows of the active set up to this many entries |S| * m (400 MB)
_DENSE_JACOBIAN = 50_000_000


def _jacobian(sub: ExactOps, u: np.ndarray, q: float, factors) -> np.ndarray:
    Lf, Zf = factors
    return (q - 1.0) * sub.hessian(hessian_weights(u, q), Lf=Lf, Zf=Zf)


def _factor(J: np.ndarray):
    """A solver for ``J x = b`` (J symmetric positive semidefinite): Cholesky when J is well
    conditioned (its reciprocal condition estimate above 1e-12), else the pseudo-inverse from the
    eigendecomposition (dependent active rows: the reduced system is consistent but its multipliers
    are not unique)."""
    import scipy.linalg as sla

    if not np.all(np.isfinite(J)):
        return None
    try:
        c = sla.cho_factor(J, check_finite=False)
        d = np.diag(c[0]) ** 2
        if d.min() > 1e-12 * d.max():  # cheap conditioning proxy of the Cholesky pivots
            return lambda b: sla.cho_solve(c, b, check_finite=False)
    except np.linalg.LinAlgError:
        pass
    pinv = np.linalg.pinv(J, rcond=1e-12, hermitian=True)
    return lambda b: pinv @ b


def _dense_gram(Af: np.ndarray, u: np.ndarray, q: float) -> np.ndarray:
    """``A diag(|u|^(q-2)) A^T`` by dsyrk (half the products of a general product), on every CPU
    for big active sets (`certify.workingset.THREADED_ENTRIES`)."""
    from certify.workingset import THREADED_ENTRIES

    X = Af * np.sqrt(hessian_weights(u, q))
    with all_cpu_blas() if X.size >= THREADED_ENTRIES else nullcontext():
        return row_gram(X, full=True)


def refine(
    ops: ExactOps,
    p: Fraction,
    lam0: np.ndarray,
    *,
    bits: int,
    max_iter: int | None = None,
    max_active_changes: int = 20,
    progress=None,
) -> Refined:
    """Newton refinement of a float dual estimate ``lam0`` (psi form) to about ``bits`` bits.

    A step with the float64 Jacobian gains 40-50 bits, so the default ``max_iter`` grows with
    ``bits`` (``80 + bits // 24``); a run that stops gaining (4 steps without halving) ends early.
    ``progress(log2 residual)``, when given, is told the residual after every step."""
    max_iter = 80 + bits // 24 if max_iter is None else max_iter
    q = p / (p - 1)
    qf = float(q)
    N = ops.N
    lam0 = np.maximum(np.asarray(lam0, dtype=np.float64), 0.0).copy()
    # coinciding rows: keep one representative per group (the multiplier of a group is what is unique)
    rep = ops.representatives()
    for r in range(N):
        if rep[r] != r:
            lam0[rep[r]] += lam0[r]
            lam0[r] = 0.0
    is_rep = rep == np.arange(N)
    top = float(lam0.max()) if lam0.size and lam0.max() > 0 else 1.0
    S = [int(i) for i in np.flatnonzero(lam0 > 1e-9 * top)] or [
        int(i) for i in np.flatnonzero(is_rep)
    ]
    if not lam0.any():
        lam0 = np.where(is_rep, 1.0, 0.0)
    lam_exp = int(np.floor(np.log2(top))) - bits - 16
    Lam = {i: float_to_fixed(lam0[i], lam_exp) for i in S}
    it_total = 0
    with flint.ctx.workprec(bits + 64):
        for _change in range(max_active_changes):
            sub = ops.subset(S)
            one = None
            res_hist = []
            J_lu, J_wt = None, None
            converged = False
            for it in range(max_iter):
                it_total += 1
                lam_vec = [Lam[i] for i in S]
                U = sub.rmatvec(lam_vec)
                u_exp = ops.exp + lam_exp
                W, w_exp = phi_fixed(U, u_exp, q, bits + 16)
                R = sub.matvec(W)
                e = ops.exp + w_exp
                one = 1 << (-e) if e < 0 else None
                if one is None:  # w too coarse; cannot happen for sane bit counts
                    break
                # the residual scaled by 2**sh to magnitude ~1: a residual below 1e-308 (more than 308
                # digits) is no float64, and the Newton step is solved in the same scale
                res_ints = [k - one for k in R]
                top = max(abs(k).bit_length() for k in res_ints)
                sh = -(top + e)
                r = int_vector_to_float(res_ints, e + sh)
                lg = float(top + e) if top else float("-inf")  # log2 max |residual|, within 1
                res_hist.append(lg)
                if progress is not None:
                    progress(lg)
                if lg < -bits or (it > 3 and lg >= res_hist[-2] - 1 and lg < -bits + 40):
                    converged = lg < -bits + 40
                    break
                if it > 8 and lg >= res_hist[-5] - 1:  # stalled far from the target
                    break
                if J_lu is None or it in (1, 2, 4):
                    uf = int_vector_to_float(U, u_exp)
                    wt = hessian_weights(uf, qf)
                    if J_lu is None or not np.array_equal(wt, J_wt):  # q = 2: the same J
                        J = (
                            _jacobian(sub, uf, qf, sub.float_factors())
                            if sub.N * ops.m > _DENSE_JACOBIAN
                            else (qf - 1.0) * _dense_gram(sub.float_rows(), uf, qf)
                        )
                        J_lu, J_wt = _factor(J), wt
                    if J_lu is None:
                        break
                step = J_lu(-r)
                if not np.all(np.isfinite(step)):
                    break
                for i, s in zip(S, step):
                    Lam[i] += float_to_fixed(
                        float(s), lam_exp + sh
                    )  # the step is in units of 2**-sh
            # active-set update
            neg = [i for i in S if Lam[i] <= 0]
            full_W = W
            Rall = ops.matvec(full_W)
            e = ops.exp + w_exp
            slack = (
                int_vector_to_float([k - (1 << (-e)) for k in Rall], e)
                if e < 0
                else int_vector_to_float([(k << e) - 1 for k in Rall], 0)
            )  # coarse w (data of extreme scale)
            tol = max(2.0 ** (-bits // 2), 1e-30)
            viol = [i for i in range(N) if i not in Lam and is_rep[i] and slack[i] < -tol]
            if not neg and not viol:
                break
            if neg:
                worst = min(neg, key=lambda i: Lam[i])
                S.remove(worst)
                Lam.pop(worst)
            if viol:
                worst = int(min(viol, key=lambda i: slack[i]))
                S.append(worst)
                S.sort()
                Lam[worst] = max(1, min(Lam.values()) // 1024) if Lam else 1 << bits
            if not S:
                break
    lam_full = [Lam.get(i, 0) for i in range(N)]
    lg = res_hist[-1] if res_hist else float("inf")
    resid = (
        math.ldexp(1.0, min(int(lg), 1023)) if math.isfinite(lg) else (0.0 if lg < 0 else math.inf)
    )
    return Refined(
        lam_full,
        lam_exp,
        list(W),
        w_exp,
        tuple(S),
        resid,
        converged and not neg and not viol,
        it_total,
        lg,
    )
