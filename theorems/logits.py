"""Exact logits and ball-valued loss terms along a trajectory (docs/theory.md section 5.6).

The shared lower layer of the step-size predicate (`theorems.stepsize`), its cheap pre-filter
(`theorems.prefilter`) and the segment-convexity check (`theorems.segment`): the logits
``s_it = x_it^T W_k z_i`` as exact integers times a power of two (float64 entries are dyadic), the exact
token values ``h_it = v^T x_it``, the softmax over the valid tokens (padding tokens, docs/theory.md
section 1.3, get weight exactly 0) and the loss ``l`` and ``l'`` of the losses evaluated in arb balls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flint import arb, fmpz_mat

from certify.errors import MdcertError

__all__ = [
    "RIGOROUS_LOSSES",
    "BALL_EXP",
    "BALL_LOG1P",
    "check_trajectory",
    "dyadic_rows",
    "logit_ints",
    "exact_logits",
    "logit_balls",
    "loss_terms",
    "token_values",
    "padding_mask",
    "softmax_balls",
]

#: losses whose l and l' are evaluated in balls here
RIGOROUS_LOSSES = ("logistic", "exponential", "linear")
BALL_EXP = np.frompyfunc(lambda x: x.exp(), 1, 1)
BALL_LOG1P = np.frompyfunc(lambda x: x.log1p(), 1, 1)


def check_trajectory(trajectory: Any, d: int) -> np.ndarray:
    """The trajectory as a finite float64 array (K+1, d, d) with K >= 1, or a one-line error."""
    try:
        Ws = np.array(trajectory, dtype=np.float64)
    except (TypeError, ValueError):
        raise MdcertError("trajectory must be a numeric array of shape (K+1, d, d)") from None
    if Ws.ndim != 3 or Ws.shape[1:] != (d, d) or Ws.shape[0] < 2:
        raise MdcertError(
            f"trajectory must have shape (K+1, {d}, {d}) with K >= 1 steps, got {Ws.shape}"
        )
    if not np.all(np.isfinite(Ws)):
        k = int(np.argwhere(~np.isfinite(Ws))[0][0])
        raise MdcertError(
            f"trajectory contains NaN or Inf (first at iterate {k}); the path diverged - lower the step size"
        )
    return Ws


def dyadic_rows(Ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer matrix (K1, m) of Python ints and per-iterate binary exponents (K1,)."""
    K1 = Ws.shape[0]
    flat = Ws.reshape(K1, -1)
    mant, e = np.frexp(flat)
    k = (mant * 2.0**53).astype(np.int64)
    e = e.astype(np.int64) - 53
    nz = k != 0
    big = np.iinfo(np.int64).max
    emin = np.where(nz, e, big).min(axis=1)
    emin = np.where(emin == big, 0, emin)
    shift = np.where(nz, e - emin[:, None], 0)
    ints = k.astype(object) << shift.astype(object)
    return ints, emin


def logit_ints(
    problem, Ws: np.ndarray, rows: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact logits as integers: ``x_it^T W_k z_i = S[k, i, t] * 2**E[k]``.

    One python-flint ``fmpz_mat`` product for the whole path. Returns (S object array of Python ints
    (K1, n, T), E int64 array (K1,)).
    """
    n, T, d = problem.n, problem.T, problem.d
    X, z = problem.exact("X"), problem.exact("z")
    M = (X.as_object()[:, :, :, None] * z.as_object()[:, None, None, :]).reshape(n * T, d * d)
    Mmat = fmpz_mat(n * T, d * d, [int(c) for c in M.ravel()])
    ints, emin = rows if rows is not None else dyadic_rows(Ws)
    K1 = Ws.shape[0]
    Wmat = fmpz_mat(d * d, K1, [int(c) for c in ints.T.ravel()])
    S = np.array([int(s) for s in (Mmat * Wmat).entries()], dtype=object).reshape(n * T, K1)
    return S.T.reshape(K1, n, T), emin + (X.exp + z.exp)


def exact_logits(problem, Ws: np.ndarray) -> np.ndarray:
    """Exact logits ``x_it^T W_k z_i`` as exact arb balls, shape (K1, n, T)."""
    S, E = logit_ints(problem, Ws)
    return logit_balls(S, E)


def logit_balls(S: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Exact arb balls of integer logits ``S * 2**E`` (E per iterate)."""
    out = np.empty(S.shape, dtype=object)
    for k in range(S.shape[0]):
        e = int(E[k])
        out[k] = np.frompyfunc(lambda s: arb((s, e)), 1, 1)(S[k])
    return out


def padding_mask(problem) -> np.ndarray | None:
    """The problem's valid-token mask (n, T), or None for a full-length problem (no masking at all, so
    its balls are bit for bit those of a problem without lengths)."""
    return None if problem.lengths is None else problem.token_mask


def softmax_balls(S: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """``softmax_t`` of logit balls ``S`` (..., n, T) over the valid tokens: ``e^s`` is replaced by an
    exact 0 at padding (``mask`` False), so padding has weight exactly 0 in every sum."""
    E = BALL_EXP(S)
    if mask is not None:
        E = np.where(mask, E, arb(0))
    return E / E.sum(axis=-1)[..., None]


def loss_terms(u: np.ndarray, loss: str) -> tuple[np.ndarray, np.ndarray]:
    """``l(u)`` and ``l'(u)`` elementwise in balls."""
    if loss == "logistic":
        em = BALL_EXP(-u)
        return BALL_LOG1P(em), -em / (1 + em)
    if loss == "exponential":
        em = BALL_EXP(-u)
        return em, -em
    if loss == "linear":
        return -u, np.full(u.shape, arb(-1), dtype=object)
    raise MdcertError(
        f"no rigorous evaluation for loss {loss!r}; use one of {', '.join(RIGOROUS_LOSSES)}"
    )


def token_values(problem) -> tuple[np.ndarray, int]:
    """Exact ``h_it = v^T x_it`` as (object ints (n, T), exponent)."""
    X, v = problem.exact("X"), problem.exact("v")
    return np.einsum("ntd,d->nt", X.as_object(), v.as_object()), X.exp + v.exp
