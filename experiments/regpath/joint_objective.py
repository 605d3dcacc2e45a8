"""Log-domain objectives of joint training (docs/theory.md section 5, Theorem 31): ``L(W, v)`` with scale-free
gradients of both blocks (`JointObjective`) and the convex decoder block ``log L(v)`` for fixed
attended features (`DecoderLoss`, in the `experiments.regpath.excess_loss.ExcessLoss.evaluate` format so
that `experiments.regpath.sphere.solve_on_sphere` solves it). A variable-length problem passes ``mask``
(docs/theory.md section 1.3): padding gets logit ``-inf``, so it has softmax weight 0 in the attended features,
the loss and both gradients, and is never the softmax argmax."""

from __future__ import annotations

import math

import numpy as np

from experiments.regpath.excess_loss import (
    ExcessLoss,
    token_columns,
    log_loss_values,
    log_neg_derivative,
    logsumexp,
)

__all__ = ["JointObjective", "DecoderLoss"]


class JointObjective:
    """``L(W, v)`` in log domain with scale-free gradients for both blocks (float64 numpy).

    ``mask``: valid tokens (n, T) bool of a variable-length problem (``AttentionProblem.token_mask``), or
    None; trailing all-padding columns are dropped (`token_columns`: ``self.X``, ``self.T`` and the
    token axis of `log_softmax` are the kept width).
    """

    def __init__(self, X, y, z, *, loss: str = "logistic", mask: np.ndarray | None = None) -> None:
        X = np.asarray(X, dtype=np.float64)
        self.mask, width = token_columns(mask, X.shape[0], X.shape[1])
        self.X = X[:, :width]
        self.y = np.asarray(y, dtype=np.float64)
        self.z = np.asarray(z, dtype=np.float64)
        self.n, self.T, self.d = self.X.shape
        self.loss = loss
        self.K = np.einsum("itj,ik->itjk", self.X, self.z).reshape(self.n * self.T, self.d * self.d)

    def excess_loss(self, v: np.ndarray) -> ExcessLoss:
        """The fixed-decoder objective of this data at decoder ``v`` (the W block)."""
        return ExcessLoss(self.X, self.y, self.z, v, loss=self.loss, mask=self.mask)

    def log_softmax(self, W: np.ndarray) -> np.ndarray:
        """Log attention weights (n, T), ``-inf`` at padding."""
        s = (np.asarray(W, dtype=np.float64).ravel() @ self.K.T).reshape(self.n, self.T)
        if self.mask is not None:
            s = np.where(self.mask, s, -np.inf)
        return s - logsumexp(s, axis=1)[:, None]

    def features(self, W: np.ndarray) -> np.ndarray:
        """Attended features ``b_i = y_i X_i^T softmax(X_i W z_i)`` (n, d): ``y_i f_i = v^T b_i``."""
        sm = np.exp(self.log_softmax(W))
        return self.y[:, None] * np.einsum("it,itd->id", sm, self.X)

    def log_loss(self, W: np.ndarray, v: np.ndarray) -> float:
        """``log L(W, v)``, exact in log domain (the decoder split of `ExcessLoss`)."""
        obj = self.excess_loss(v)
        logE = float(
            obj.evaluate(np.asarray(W, dtype=np.float64).ravel()[None, :], grad=False)[
                "log_excess"
            ][0]
        )
        return float(np.logaddexp(obj.log_base_loss, logE))

    def scaled_gradients(self, W: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positive multiples of ``grad_W L`` and ``grad_v L``, each block scaled by its own positive
        factor (its largest term is 1; computed in log domain, so nothing underflows at saturation).
        Only directions are meaningful (normalized steps). A block whose gradient is exactly zero
        (e.g. ``grad_W`` at ``v = 0``) is returned as zeros."""
        W = np.asarray(W, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        lsm = self.log_softmax(W)
        sm = np.exp(lsm)
        gamma = self.y[:, None] * np.einsum("itd,d->it", self.X, v)
        a = np.argmax(lsm, axis=1)
        ga = gamma[np.arange(self.n), a]
        c = ga[:, None] - gamma  # gamma_a - gamma_t (mixed signs)
        with np.errstate(divide="ignore"):
            lpos = logsumexp(
                np.where(c > 0, lsm + np.log(np.where(c > 0, c, 1.0)), -np.inf), axis=1
            )
            lneg = logsumexp(
                np.where(c < 0, lsm + np.log(np.where(c < 0, -c, 1.0)), -np.inf), axis=1
            )
        # delta_i = P - N, u_i = gamma_a - delta_i; sign and log|delta|
        with np.errstate(invalid="ignore"):
            sign_d = np.sign(
                np.exp(lpos - np.maximum(lpos, lneg)) - np.exp(lneg - np.maximum(lpos, lneg))
            )
        sign_d = np.where(np.isfinite(np.maximum(lpos, lneg)), sign_d, 0.0)
        hi, lo = np.maximum(lpos, lneg), np.minimum(lpos, lneg)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_abs_d = np.where(sign_d != 0, hi + np.log1p(-np.exp(lo - hi)), -np.inf)
        delta = sign_d * np.exp(log_abs_d)
        u = ga - delta
        log_dl = log_neg_derivative(u, self.loss)  # log(-l'(u_i)) ; dL/du_i = -exp(.)/n
        # v-block: grad_v L = -(1/n) sum_i (-l') b_i
        wv = np.exp(log_dl - np.max(log_dl))
        Gv = -(wv[:, None] * (self.y[:, None] * np.einsum("it,itd->id", sm, self.X))).sum(axis=0)
        # W-block: coefficient of x_it z_i^T is (dL/du_i) sm_it (gamma_it - u_i), gamma_t - u = -c_t + delta
        val = -c + delta[:, None]
        val[np.arange(self.n), a] = delta
        with np.errstate(divide="ignore"):
            lmag = log_dl[:, None] + lsm + np.log(np.abs(val))
        sgn = -np.sign(val)
        top = np.max(lmag)
        if not np.isfinite(top):
            GW = np.zeros(self.d * self.d)
        else:
            coef = sgn * np.exp(lmag - top)
            GW = coef.ravel() @ self.K
        return GW.reshape(self.d, self.d), Gv


class DecoderLoss:
    """``log L(v)`` for fixed attended features b (the v-block), in the `ExcessLoss.evaluate` format."""

    def __init__(self, b: np.ndarray, loss: str) -> None:
        self.b = np.asarray(b, dtype=np.float64)
        self.loss = loss
        self.log_n = math.log(self.b.shape[0])

    def evaluate(self, V: np.ndarray, *, grad: bool = True) -> dict:
        V = np.atleast_2d(V)
        u = V @ self.b.T  # (S, n)
        ll = log_loss_values(u, self.loss)
        logL = logsumexp(ll, axis=1) - self.log_n
        out = {"log_excess": logL, "loss": np.exp(logL), "selected": None, "grad": None}
        if grad:
            w = np.exp(log_neg_derivative(u, self.loss) - self.log_n - logL[:, None])
            out["grad"] = -(w @ self.b)
        return out
