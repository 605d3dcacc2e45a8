"""The relative-smoothness condition along a recorded p-GD path, measured in float64 (docs/theory.md section 7.5).

The descent lemma of mirror descent needs ``psi - eta L`` convex (docs/theory.md section 2.4). Along a recorded
linear path this is checked at each recorded iterate ``w`` through the Hessians
``D = diag((p-1)|w|^(p-2))`` and ``eta H_L`` with ``H_L = (1/N) A^T diag(l''(Aw)) A`` and the effective
step (``eta`` for constant steps, ``eta / ||grad L||_q`` for normalized ones), formed scale-free as the
engine forms the gradient: the common factor ``e^(-m0)`` cancels (normalized) or is applied once
(constant). The value reported per iterate is ``1 - eta lambda_max(D^(-1/2) H_L D^(-1/2))`` for p <= 2
(D^(-1/2) is finite) and ``lambda_min(D - eta H_L) / max D`` for p > 2; the condition holds at that
iterate when it is >= 0. Float64 eigenvalues at sampled points: a negative value well below rounding
refutes the condition there, a non-negative one proves nothing between the samples.
"""

from __future__ import annotations

import numpy as np

from experiments.linear.engine import Loss, PgdPaths

__all__ = ["MAX_VARIABLES", "TOLERANCE", "smoothness_margins"]

#: values above -TOLERANCE count as "holds at this iterate" (float64 eigenvalue rounding)
TOLERANCE = 1e-9
#: the condition is measured only up to this many variables (one m x m eigenproblem per sample)
MAX_VARIABLES = 400


def _weights(M: np.ndarray, loss: Loss) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, h, m0): ``-l'(M) = e^(-m0) c`` and ``l''(M) = e^(-m0) h`` per row of margins (S, N)."""
    mmin = M.min(axis=1, keepdims=True)
    if loss is Loss.EXPONENTIAL:
        c = np.exp(mmin - M)
        return c, c, mmin
    m0 = np.maximum(mmin, 0.0)
    E = np.exp(np.minimum(m0 - M, 700.0))
    c = E / (1.0 + E * np.exp(-m0))
    with np.errstate(over="ignore"):
        sig = 1.0 / (1.0 + np.exp(-M))  # sigmoid(M); l'' = sigmoid(M) sigmoid(-M)
    return c, c * sig, m0


def smoothness_margins(paths: PgdPaths, A: np.ndarray, *, samples: int = 10) -> np.ndarray | None:
    """The condition's value (B, S) at the last ``samples`` records of each trajectory with w != 0
    (see the module docstring); None when the problem has more than `MAX_VARIABLES` variables."""
    B, R, m = paths.W.shape
    if m > MAX_VARIABLES:
        return None
    cfg = paths.config
    idx = np.arange(max(1, R - samples), R)
    out = np.full((B, len(idx)), np.inf)
    N = A.shape[0]
    for b, (p, lr, _) in enumerate(cfg.grid):
        W = paths.W[b, idx]
        c, h, m0 = _weights(W @ A.T, cfg.loss)
        G = c @ A
        if cfg.normalize:
            q = p / (p - 1.0)
            scale = np.abs(G).max(axis=1, keepdims=True)
            eta = lr / (scale[:, 0] * ((np.abs(G) / scale) ** q).sum(axis=1) ** (1.0 / q))
        else:
            eta = lr * np.exp(-m0[:, 0]) / N
        # eta_eff H_L: constant, eta e^(-m0)/N A^T diag(h) A; normalized, the e^(-m0)/N of H_L and of
        # ||grad L||_q cancel, leaving lr / ||G||_q A^T diag(h) A
        H = np.einsum("sn,ni,nj->sij", h, A, A) * eta[:, None, None]
        aw = np.abs(W)
        for s in range(len(idx)):
            if not np.any(aw[s]):
                continue
            if p <= 2:
                Sd = aw[s] ** ((2.0 - p) / 2.0) / np.sqrt(p - 1.0)
                lam = np.linalg.eigvalsh(Sd[:, None] * H[s] * Sd[None, :])[-1]
                out[b, s] = 1.0 - lam
            else:
                D = (p - 1.0) * aw[s] ** (p - 2.0)
                lam = np.linalg.eigvalsh(np.diag(D) - H[s])[0]
                out[b, s] = lam / D.max()
    return out
