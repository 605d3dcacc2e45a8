"""Log-domain loss kernels of the fixed-decoder attention loss (docs/theory.md section 5, Theorem 6).

With ``gamma_it = y_i v^T x_it`` and reference tokens
``a_i = argmax_t gamma_it``, every logistic/exponential loss splits exactly as
``L(W) = L_* + E(W)`` with ``L_* = (1/n) sum_i l(gamma_{i a_i})`` and the excess
``E(W) = (1/n) sum_i [l(gamma_{i a_i} - delta_i) - l(gamma_{i a_i})] > 0``,
``delta_i = sum_t softmax_t(s_i) (gamma_{i a_i} - gamma_it) >= 0``. At large R, E and its gradient
are of order ``exp(-R x margin)`` (below float64 resolution of L itself). The solver minimizes
``log E`` computed with log-sum-exp from ``log delta_i``; its gradient ``grad L / E`` stays of
order R, so progress continues to R = 10^3 and beyond, where a plain L-BFGS on L stalls at R ~ 30.

Variable-length problems (docs/theory.md section 1.3) pass ``mask`` (valid tokens, (n, T) bool): padding
gets logit ``-inf`` (softmax weight 0, gradient 0) and ``log c = -inf``, and the reference tokens
``a_i`` are the argmax over valid tokens only. Without a mask nothing changes (the same operations).
"""

from __future__ import annotations

import math

import numpy as np

from certify.errors import MdcertError

__all__ = [
    "LOSSES",
    "logsumexp",
    "log_loss_values",
    "log_neg_derivative",
    "token_columns",
    "ExcessLoss",
]

LOSSES = ("logistic", "exponential")


def logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    """``log sum exp(a)`` along ``axis`` (-inf for an all -inf slice)."""
    m = np.max(a, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m_safe), axis=axis, keepdims=True)) + m_safe
    return np.squeeze(out, axis=axis)


def _log_expm1(delta: np.ndarray, log_delta: np.ndarray) -> np.ndarray:
    """``log(expm1(delta))`` for delta >= 0 given also ``log delta`` (delta may underflow)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = log_delta + delta / 2.0
        mid = np.log(np.expm1(np.minimum(delta, 30.0)))
        big = delta + np.log1p(-np.exp(-np.maximum(delta, 30.0)))
    return np.where(delta < 1e-5, small, np.where(delta > 30.0, big, mid))


def log_loss_values(u: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """``log l(u)`` without underflow (logistic: ``log(log1p(e^{-u}))``; exponential: ``-u``)."""
    u = np.asarray(u, dtype=np.float64)
    if loss == "exponential":
        return -u
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        big = -u - np.exp(-np.maximum(u, 30.0)) / 2.0
        small = np.log(np.logaddexp(0.0, -np.minimum(u, 30.0)))
    return np.where(u > 30.0, big, small)


def log_neg_derivative(u: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """``log(-l'(u))`` (logistic: ``log sigmoid(-u)``; exponential: ``-u``)."""
    u = np.asarray(u, dtype=np.float64)
    return -u if loss == "exponential" else -np.logaddexp(0.0, u)


def token_columns(mask, n: int, T: int) -> tuple[np.ndarray | None, int]:
    """The valid-token mask in the form the kernels use: ``(mask, width)``.

    ``width`` is the number of leading token columns kept: trailing columns that are padding in
    every example take part in nothing and are dropped (so zero padding appended to a full-length
    problem leaves exactly the full-length arithmetic). ``mask`` is the read-only bool (n, width)
    mask of the kept columns, or None when it has no padding (then the unmasked code runs).
    """
    if mask is None:
        return None, T
    m = np.asarray(mask)
    if m.dtype != np.bool_ or m.shape != (n, T):
        raise MdcertError(
            f"the token mask must be a bool array of shape ({n}, {T}), got {m.dtype} {m.shape}"
        )
    if np.any(m.sum(axis=1) < 2):
        raise MdcertError("the token mask leaves an example with fewer than 2 valid tokens")
    width = int(np.flatnonzero(m.any(axis=0))[-1]) + 1
    m = m[:, :width].copy()
    if m.all():
        return None, width
    m.setflags(write=False)
    return m, width


class ExcessLoss:
    """Log of the excess loss ``E(W) = L(W) - L_*`` for a fixed decoder, batched over W (module doc).

    Args:
        X: tokens (n, T, d); y: labels (n,); z: comparison vectors (n, d); v: decoder (d,).
        loss: "logistic" (default) or "exponential".
        mask: valid tokens (n, T) bool of a variable-length problem (``AttentionProblem.token_mask``),
            or None (full length). Trailing all-padding columns are dropped (`token_columns`):
            ``self.T`` and the token axis of `logits` are the kept width.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        z: np.ndarray,
        v: np.ndarray,
        *,
        loss: str = "logistic",
        mask: np.ndarray | None = None,
    ) -> None:
        if loss not in LOSSES:
            raise MdcertError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
        self.loss = loss
        X = np.asarray(X, dtype=np.float64)
        self.mask, width = token_columns(mask, X.shape[0], X.shape[1])
        X = X[:, :width]
        self.n, self.T, self.d = X.shape
        self.m = self.d * self.d
        z = np.asarray(z, dtype=np.float64)
        # K[(i,t), (j,k)] = x_itj z_ik, so logits s = K vec(W) (row-major vec)
        self.K = np.einsum("itj,ik->itjk", X, z).reshape(self.n * self.T, self.m)
        gamma = np.asarray(y, dtype=np.float64)[:, None] * np.einsum(
            "itd,d->it", X, np.asarray(v, dtype=np.float64)
        )
        self.gamma = gamma
        valid = gamma if self.mask is None else np.where(self.mask, gamma, -np.inf)
        self.ref = np.argmax(valid, axis=1)  # over valid tokens only
        self.g = gamma[np.arange(self.n), self.ref]  # reference score per example
        c = self.g[:, None] - gamma  # >= 0 on valid tokens
        if self.mask is not None:
            c = np.where(self.mask, c, 0.0)  # padding: log c = -inf, no term
        with np.errstate(divide="ignore"):
            self.log_c = np.where(c > 0, np.log(np.where(c > 0, c, 1.0)), -np.inf)
        self.log_n = math.log(self.n)
        self.base_loss = float(np.mean(self._loss(self.g)))
        self.log_base_loss = float(logsumexp(log_loss_values(self.g, loss), axis=0)) - self.log_n

    def _loss(self, u: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -u) if self.loss == "logistic" else np.exp(-u)

    def logits(self, Wflat: np.ndarray) -> np.ndarray:
        """Logits (S, n, T) of a batch of flattened W (S, m) (``-inf`` at padding)."""
        s = (Wflat @ self.K.T).reshape(-1, self.n, self.T)
        return s if self.mask is None else np.where(self.mask[None], s, -np.inf)

    def evaluate(self, Wflat: np.ndarray, *, grad: bool = True) -> dict:
        """``log E``, its gradient w.r.t. vec(W) and side quantities for a batch (S, m).

        Returns:
            dict with ``log_excess`` (S,), ``grad`` (S, m) = grad L / E (None if grad=False),
            ``loss`` (S,) = L_* + E in float64, ``selected`` (S, n) softmax argmax tokens.
        """
        Wflat = np.atleast_2d(np.asarray(Wflat, dtype=np.float64))
        s = self.logits(Wflat)
        lse = logsumexp(s, axis=2)
        lsm = s - lse[..., None]  # log softmax (S, n, T)
        log_delta = logsumexp(lsm + self.log_c[None], axis=2)  # (S, n), -inf if delta == 0
        with np.errstate(over="ignore"):
            delta = np.exp(log_delta)
        g = self.g[None, :]
        lem1 = _log_expm1(delta, log_delta)
        if self.loss == "logistic":
            log_u = lem1 - np.logaddexp(0.0, g)  # log(expm1(delta) * sigmoid(-g))
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                tiny = log_u - np.exp(np.minimum(log_u, -20.0)) / 2.0
                regular = np.log(np.logaddexp(0.0, np.maximum(log_u, -20.0)))
            log_ex = np.where(log_u < -20.0, tiny, regular)
            log_w = -np.logaddexp(0.0, g - delta)  # d excess / d delta
        else:
            log_ex = lem1 - g
            log_w = delta - g
        log_ex = np.where(np.isfinite(log_delta), log_ex, -np.inf)
        logE = logsumexp(log_ex, axis=1) - self.log_n  # (S,)
        with np.errstate(over="ignore"):
            excess = np.exp(logE)
        out = {
            "log_excess": logE,
            "loss": self.base_loss + excess,
            "selected": np.argmax(s, axis=2),
            "grad": None,
            "log_delta": log_delta,
        }
        if grad:
            finite = np.isfinite(logE)
            shift = np.where(finite, logE, 0.0)[:, None, None] + self.log_n
            base = log_w[..., None] + lsm - shift
            with np.errstate(over="ignore", invalid="ignore"):
                coef = np.exp(base + self.log_c[None]) - np.exp(base + log_delta[..., None])
            coef = np.where(np.isfinite(coef), coef, 0.0)
            coef[~finite] = 0.0
            out["grad"] = coef.reshape(coef.shape[0], -1) @ self.K
        return out
