"""One tensor program of the batched engine (docs/theory.md section 2): trajectories sharing a step size (and by
default p), their mirror-descent state, the normalized gradients and the freezing of rows whose step
is undefined.

The mirror step keeps the dual variable ``Q = grad psi(W)`` as state:
``Q <- Q - eta G`` (``G`` optionally divided by ``||G||_q``), ``W = sign(Q)|Q|^{1/(p-1)}``; for p = 2
this is ``W.add_(G, alpha=-eta)``, the torch SGD update. A trajectory whose gradient or iterate
becomes non-finite (e.g. the logits overflow float64) stops with status ``nonfinite``; one whose
normalized step is undefined (gradient exactly 0) stops with ``zero_gradient``.
"""

from __future__ import annotations

import numpy as np
import torch

from certify.lp import exponents_of
from experiments.paths.kernels import (
    dual_normalize,
    flat_exponent,
    forward,
    grad_v,
    grad_W,
    spow,
    token_values,
)
from experiments.paths.result import TrajectoryStatus

__all__ = ["PathGroup"]


class PathGroup:
    """Trajectories sharing (lr, decoder lr) and, by default, p: one tensor program, compacted when
    members leave. One p: scalar exponents (fast paths); several: per-row exponent tensors.

    A row whose step is not well defined (non-finite gradient, or a zero gradient under
    normalization) is frozen on the device (its ``alive`` flag drops, its update becomes 0) and
    retired at the next host check with the exact step at which it stopped (``count``).
    """

    def __init__(self, gids, p, lr, data, W0, v0, normalize, train_decoder, v_lr, device, dtype):
        self.gids = np.asarray(gids, dtype=np.int64)
        self.device, self.dtype = device, dtype
        self._set_exponents(list(p) if isinstance(p, (list, tuple)) else [p] * len(self.gids))
        self.lr = float(lr)
        self.v_lr = float(v_lr)
        self.normalize = bool(normalize)
        self.train_decoder = bool(train_decoder)

        def t(a):  # a copy: the problem arrays are read-only and torch must not alias them
            return torch.tensor(np.asarray(a), dtype=dtype, device=device)

        self.X, self.z, self.y = t(data["X"]), t(data["z"]), t(data["y"])
        mask = data.get("mask")  # valid tokens (B,n,T), None: full length
        self.mask = (
            None
            if mask is None
            else torch.tensor(np.asarray(mask), dtype=torch.bool, device=device)
        )
        self.Xt = self.X.transpose(-1, -2).contiguous()
        self.ny = -self.y
        self.gscale = -self.y / self.y.shape[-1]
        self.arange = torch.arange(self.X.shape[2], device=device)
        self.Q = spow(t(W0), self.pm1).clone()
        self.W = self._primal(self.Q)
        self.v = t(v0)
        if self.train_decoder:
            self.Qv = spow(self.v, flat_exponent(self.pm1)).clone()
            self.v = self._primal(self.Qv)
        B = len(self.gids)
        self.alive = torch.ones(B, dtype=torch.bool, device=device)
        self.count = torch.zeros(B, dtype=torch.int64, device=device)  # steps taken by frozen rows
        self.frozen = False
        self._refresh_decoder()

    _STATE = ("X", "Xt", "z", "y", "ny", "gscale", "Q", "W", "v", "alive", "count")

    def _set_exponents(self, p_rows: list) -> None:
        self.p_list = list(p_rows)
        self.mixed = len(set(p_rows)) > 1
        E = [exponents_of(x) for x in p_rows]
        if self.mixed:  # one exponent per row: (B,1,1) tensors

            def col(vals):
                return torch.tensor(vals, dtype=self.dtype, device=self.device).view(-1, 1, 1)

            self.pm1, self.inv_pm1 = col([e.pm1 for e in E]), col([e.inv_pm1 for e in E])
            self.q, self.pp = col([float(x / (x - 1)) for x in p_rows]), col([e.p for e in E])
        else:  # scalar exponents: fast paths for 2, 1/2, 3/2
            self.pm1, self.inv_pm1, self.q, self.pp = (
                E[0].pm1,
                E[0].inv_pm1,
                float(p_rows[0] / (p_rows[0] - 1)),
                E[0].p,
            )

    def _primal(self, Q):
        e = self.inv_pm1 if Q.dim() == 3 else flat_exponent(self.inv_pm1)
        return Q if (not self.mixed and e == 1.0) else spow(Q, e)

    def p_rows(self, rows: torch.Tensor):
        """The exponent p of ``rows`` (a float, or a (k,1,1) tensor for a mixed group)."""
        return self.pp.index_select(0, rows) if self.mixed else self.pp

    def _refresh_decoder(self):
        self.h = token_values(self.X, self.v)

    def keep(self, mask: np.ndarray) -> torch.Tensor:
        """Keep the rows in ``mask``; returns their index tensor (to slice per-step quantities)."""
        idx = torch.as_tensor(np.flatnonzero(mask), device=self.device)
        self.gids = self.gids[mask]
        extra = (("Qv",) if self.train_decoder else ()) + (
            ("mask",) if self.mask is not None else ()
        )
        for name in self._STATE + extra:
            setattr(self, name, getattr(self, name).index_select(0, idx))
        self._set_exponents([x for x, k in zip(self.p_list, mask) if k])
        self.frozen = self.device.type != "cpu" or not bool(self.alive.all())
        self._refresh_decoder()
        return idx

    def forward(self):
        """``(a, f, g, c, M)`` at the current iterate (see `forward`)."""
        return forward(
            self.W,
            self.Xt,
            self.z,
            self.h,
            self.y,
            self.ny,
            self.gscale,
            self.arange,
            None if self.device.type == "cpu" else True,
            self.mask,
        )

    def gradients(self, fw):
        """``(G, Gv, ok)`` at the current iterate: normalized if asked; ``ok`` False where undefined."""
        a, _, g, c, M = fw
        G = grad_W(c, self.Xt, self.z)  # e^M dL/dW: only its direction is needed
        Gv = grad_v(a, g, self.X) if self.train_decoder else None
        if not self.normalize and M is not None:
            G = G * torch.exp(-M)  # the true gradient (may underflow: a stall)
        if self.normalize:
            G, scale = dual_normalize(G, self.q, (1, 2))
            h = scale.view(-1)
            ok = torch.isfinite(h) & (h > 0)
            if Gv is not None:
                Gv, sv = dual_normalize(Gv, flat_exponent(self.q), (1,))
                hv = sv.view(-1)
                ok &= torch.isfinite(hv) & (hv > 0)
        else:
            ok = torch.isfinite(G.sum(dim=(1, 2)))
            if Gv is not None:
                ok &= torch.isfinite(Gv.sum(dim=1))
        return G, Gv, ok

    def stop_reason(self, fw, rows: torch.Tensor) -> np.ndarray:
        """Why the frozen ``rows`` stopped: ``zero_gradient`` (finite iterate, gradient exactly 0 under
        normalization) or ``nonfinite``. ``fw`` is the forward pass of those rows only."""
        a, _, g, c, _ = fw
        X, z = self.X.index_select(0, rows), self.z.index_select(0, rows)
        G = grad_W(c, self.Xt.index_select(0, rows), z)
        fin = torch.isfinite(G).all(dim=(1, 2)) & torch.isfinite(self.W.index_select(0, rows)).all(
            dim=(1, 2)
        )
        zero = (G == 0).all(dim=(1, 2))
        if self.train_decoder:
            Gv = grad_v(a, g, X)
            fin &= torch.isfinite(Gv).all(dim=1)
            zero |= (Gv == 0).all(dim=1)
        lim = (fin & zero).cpu().numpy() & self.normalize
        return np.where(lim, TrajectoryStatus.ZERO_GRADIENT.value, TrajectoryStatus.NONFINITE.value)

    def step(self, fw, k: int) -> None:
        """Mirror step k -> k+1: ``Q <- Q - eta G``, ``W = grad psi^{-1}(Q)`` (docs/theory.md section 2).

        Rows whose step is undefined are frozen: on the CPU (where a host check is free) they are
        detected at once; on an accelerator a device-side count avoids a sync per step.
        """
        G, Gv, ok = self.gradients(fw)
        if self.device.type == "cpu":
            if not bool(ok.all()):
                newly = self.alive & ~ok
                self.count = torch.where(newly, torch.full_like(self.count, k), self.count)
                self.alive &= ok
                self.frozen = True
        else:
            self.alive &= ok
            self.count += self.alive
            self.frozen = True
        if self.frozen:
            G = torch.where(
                self.alive.view(-1, 1, 1), G, torch.zeros((), dtype=G.dtype, device=G.device)
            )
        self.Q.add_(G, alpha=-self.lr)
        self.W = self._primal(self.Q)
        if self.train_decoder:
            if self.frozen:
                Gv = torch.where(
                    self.alive.view(-1, 1), Gv, torch.zeros((), dtype=Gv.dtype, device=Gv.device)
                )
            self.Qv.add_(Gv, alpha=-self.v_lr)
            self.v = self._primal(self.Qv)
            self._refresh_decoder()
