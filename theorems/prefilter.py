"""A cheap rigorous pre-filter for the step-size check (docs/theory.md section 2): no exp, no per-entry powers.

For a step ``W -> W'`` with exact logit increments ``delta_i = s_i(W') - s_i(W)``:

* Upper bound of ``D_L`` (logistic / linear loss). Along the segment, with
  ``phi_i(tau) = l(y_i sigma(s_i + tau delta_i)^T h_i)``,
  ``phi_i'' = l'' (u')^2 + l' u''`` where ``|u'| = |Cov_sigma(h, delta)| <= (R_h/2)(R_delta/2)`` and
  ``|u''| = |E_sigma[(h - f)(delta - E delta)^2]| <= R_h R_delta^2 / 4`` (Popoviciu), ``R`` the ranges.
  With ``0 <= l'' <= 1/4`` and ``-1 <= l' <= 0`` (logistic; linear: ``l'' = 0``) and
  ``R_delta^2 <= 2 sum_t delta_t^2``:
  ``D_L <= (1/n) sum_i c_i sum_t delta_it^2``, ``c_i = R_h^2/64 + R_h/4`` (linear: ``R_h/4``).
* Lower bound of ``D_psi = sum_j int_0^1 (1 - tau) psi''(W_tau,j) Delta_j^2``, ``psi''(x) = (p-1)|x|^{p-2}``:
  p <= 2: ``>= (p-1)/2 M^{p-2} ||Delta||_2^2`` with ``M`` the largest entry magnitude of both iterates;
  p > 2: ``>= (p-1)/2 sum_j m_j^{p-2} Delta_j^2`` with ``m_j = min(|W_j|, |W'_j|)`` when the signs agree
  (else 0), and ``m^{p-2} >= m^ceil(p-2)`` for ``m < 1``, ``>= m^floor(p-2)`` for ``m >= 1``.

All sums are exact integer arithmetic on the dyadic data; only the final scalars per step (and one
power ``M^{p-2}`` per step for p < 2) use arb balls. A step is proved when
``lower(D_psi) - eta upper(D_L) >= 0`` holds in balls; anything else goes to the full evaluation.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from flint import arb

from theorems.balls import arb_fraction, enclosure
from theorems.logits import token_values

__all__ = ["PREFILTER_LOSSES", "logit_increment_norms", "prefilter_steps"]

#: losses with the global bounds on l' and l'' used here
PREFILTER_LOSSES = ("logistic", "linear")
_PREC = 128


def _aligned_diff(ints: np.ndarray, exps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``x_{k+1} - x_k`` for integer stacks ``x_k = ints[k] * 2**exps[k]``: (ints, exps) of length K."""
    e = np.minimum(exps[1:], exps[:-1])
    extra = (ints.ndim - 1) * (None,)
    sh1 = (exps[1:] - e).astype(object)[(slice(None),) + extra]
    sh0 = (exps[:-1] - e).astype(object)[(slice(None),) + extra]
    return (ints[1:] << sh1) - (ints[:-1] << sh0), e


def logit_increment_norms(S: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``sum_t delta_it^2`` per step and example: (object ints (K, n), exponent per step (K,)) with
    value ``ints * 2**(2 e)``."""
    dS, e = _aligned_diff(S, E)
    return (dS * dS).sum(axis=2), e


def _coefficients(
    h: np.ndarray, hexp: int, loss: str, lengths: np.ndarray | None = None
) -> list[arb]:
    """Per example, the curvature constant ``c_i`` from the range ``R_h`` of its valid token values
    (``lengths``: tokens per example, None for all)."""
    out = []
    for i, row in enumerate(h):
        row = row if lengths is None else row[: int(lengths[i])]  # padding takes part in no softmax
        R = arb((int(max(row)) - int(min(row)), hexp))
        out.append(R * R / 64 + R / 4 if loss == "logistic" else R / 4)
    return out


def _psi_lower(rows: tuple[np.ndarray, np.ndarray], Ws: np.ndarray, p: Fraction) -> list[arb]:
    """Per step, a ball whose lower end bounds D_psi(W_{k+1}, W_k) from below."""
    ints, exps = rows
    dW, e = _aligned_diff(ints, exps)
    K = dW.shape[0]
    pm1 = arb_fraction(p - 1)
    out: list[arb] = []
    if p <= 2:
        sq = (dW * dW).sum(axis=1)
        mags = np.abs(Ws.reshape(Ws.shape[0], -1)).max(axis=1)
        M = np.maximum(mags[1:], mags[:-1])
        pm2 = arb_fraction(p - 2)
        for k in range(K):
            base = arb((int(sq[k]), 2 * int(e[k]))) * pm1 / 2
            if p == 2:
                out.append(base)
            elif M[k] == 0:
                out.append(arb(0))
            else:
                out.append(base * (arb(float(M[k])) ** pm2).lower())
        return out
    # p > 2: per-entry minimum magnitude over the segment (0 across a sign change)
    e1 = np.minimum(exps[1:], exps[:-1])
    sh1 = (exps[1:] - e1).astype(object)[:, None]
    sh0 = (exps[:-1] - e1).astype(object)[:, None]
    A, B = ints[1:] << sh1, ints[:-1] << sh0
    same = (A * B) > 0
    m = np.where(same, np.minimum(np.abs(A), np.abs(B)), 0)
    klo, khi = math.floor(p - 2), math.ceil(p - 2)
    for k in range(K):
        ek = int(e1[k])
        threshold = (
            2 ** (-ek) if ek < 0 else 1
        )  # m_real = m_int * 2^ek >= 1  <=>  m_int >= threshold
        mk, sq = m[k], dW[k] * dW[k]
        big = (mk >= threshold).astype(bool)
        s_lo = int((np.where(big, mk, 1) ** klo * np.where(big, sq, 0)).sum())
        s_hi = int((np.where(big, 0, mk) ** khi * np.where(big, 0, sq)).sum())
        total = arb((s_lo, ek * (klo + 2))) + arb((s_hi, ek * (khi + 2)))
        out.append(total * pm1 / 2)
    return out


def prefilter_steps(
    problem,
    Ws: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray],
    S: np.ndarray,
    E: np.ndarray,
    eta: Any,
    p: Fraction,
    loss: str,
) -> tuple[np.ndarray, list, np.ndarray]:
    """Steps proved by the cheap bounds; ``eta`` is one exact step size or one per step (K,).

    Returns:
        (proved bool (K,), ratio upper bounds ``eta upper(D_L) / lower(D_psi)`` per step (Fraction or
        None), logits unchanged bool (K,) - there ``D_L = 0`` exactly).
    """

    dsq, e = logit_increment_norms(S, E)
    K = dsq.shape[0]
    unchanged = np.array([not any(int(x) for x in dsq[k]) for k in range(K)])
    proved = np.zeros(K, dtype=bool)
    ratios: list = [None] * K
    if loss not in PREFILTER_LOSSES:
        return proved, ratios, unchanged
    h, hexp = token_values(problem)
    with flint.ctx.workprec(_PREC):
        c = _coefficients(h, hexp, loss, problem.lengths)
        lows = _psi_lower(rows, Ws, p)
        per_step = isinstance(eta, (list, tuple, np.ndarray))
        eta_one = None if per_step else arb_fraction(eta)
        n = problem.n
        for k in range(K):
            if unchanged[k]:
                continue
            eta_b = arb_fraction(eta[k]) if per_step else eta_one
            ek = 2 * int(e[k])
            dl = sum((ci * arb((int(x), ek)) for ci, x in zip(c, dsq[k])), arb(0)) / n
            lo_psi = lows[k].lower()
            if lo_psi - eta_b * dl >= 0 and lo_psi > 0:
                proved[k] = True
                ratios[k] = enclosure(eta_b * dl / lo_psi)[1]
    return proved, ratios, unchanged
