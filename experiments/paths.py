"""Batched mirror-descent training paths: B trajectories in one tensor program (SPEC sections 2, 5).

Trajectories are the grid datasets x p values x initializations x step sizes. Each has its own p, step
size and step count; trajectories sharing ``(p, lr)`` form a group that runs with scalar exponents
(fast paths for p = 2 and p = 3) and is compacted when some of its members finish or stop. On CUDA
(launch-bound) the p values share one group with per-row exponent tensors (``group_by_p``).

The loss gradient is analytic (no autograd), one program for the whole group:
``s_it = x_it^T W z_i``, ``a = softmax_t(s)`` (max-subtracted), ``f_i = sum_t a_it h_it`` with
``h_it = v^T x_it``, ``dL/df_i = -(y_i/n) sigmoid(-y_i f_i)`` and
``dL/dW = sum_i sum_t c_it x_it z_i^T`` with ``c_it = dL/df_i a_it (h_it - f_i)``.
Saturation-safe: with m the top token, ``f_i - h_im = sum_t a_it (h_it - h_im)`` is summed
directly (not as the difference ``h - f``, which cancels to rounding noise once ``1 - a_im`` is
below ~1e-16, as in a softmax backward pass), and the gradient, linear in the small weights
``a_it (t != m)``, is formed from ``a_it e^M <= 1`` where M is the smallest top-vs-runner-up logit
gap; normalized steps only need its direction, so they neither stall on underflow nor lose
precision at any horizon. (The measured consequence: the looped autograd baseline departs from
this engine exactly where the attention saturates.)

The mirror step keeps the dual variable ``Q = grad psi(W)`` as state:
``Q <- Q - eta G`` (``G`` optionally divided by ``||G||_q``), ``W = sign(Q)|Q|^{1/(p-1)}``; for p = 2
this is ``W.add_(G, alpha=-eta)``, the torch SGD update. A trajectory whose gradient or iterate
becomes non-finite (e.g. the logits overflow float64) stops with status ``nonfinite``; one whose
normalized step is undefined (gradient exactly 0) stops with ``zero_gradient``; the stop step and
the last iterate are recorded. Neither is a crash.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Sequence

import numpy as np
import torch

from certify.errors import MdcertError
from certify.exact import parse_p
from certify.lp import exponents_of

__all__ = [
    "TrajectoryStatus",
    "PathResult",
    "resolve_device",
    "record_schedule",
    "stack_problems",
    "loss_and_grad",
    "run_paths",
    "directional_bregman",
]


class TrajectoryStatus(str, Enum):
    """How a trajectory ended."""

    OK = "ok"                    #: ran all its steps
    NONFINITE = "nonfinite"      #: a NaN/Inf appeared in the gradient or iterate; stopped there
    ZERO_GRADIENT = "zero_gradient"  #: normalized step undefined: the gradient is exactly 0; stopped


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"`` or ``"cuda[:k]"``.

    Raises:
        MdcertError: unknown device name, or CUDA requested but not available.
    """
    name = "auto" if device is None else str(device).strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise MdcertError(f"device {name!r} requested but CUDA is not available; use --device cpu or auto")
        try:
            dev = torch.device(name)
        except RuntimeError:
            raise MdcertError(f"invalid device {name!r}; use auto, cpu, cuda or cuda:K") from None
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise MdcertError(f"device {name!r} does not exist ({torch.cuda.device_count()} CUDA devices)")
        return dev
    raise MdcertError(f"unknown device {name!r}; use auto, cpu or cuda")


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    table = {"float64": torch.float64, "double": torch.float64, "float32": torch.float32, "float": torch.float32}
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise MdcertError(f"unsupported dtype {dtype}; use float64 or float32")
        return dtype
    try:
        return table[str(dtype).lower()]
    except KeyError:
        raise MdcertError(f"unsupported dtype {dtype!r}; use float64 or float32") from None


def record_schedule(steps: int, records: int) -> np.ndarray:
    """Log-spaced recording steps ``{0, 1, ..., steps}`` (at most ``records`` values, always 0 and steps)."""
    if records < 2:
        raise MdcertError(f"records must be >= 2, got {records}")
    if steps <= 0:
        return np.zeros(1, dtype=np.int64)
    grid = np.unique(np.round(np.geomspace(1, steps, num=records - 1)).astype(np.int64))
    # unique() can leave fewer than records-1 points for short runs; that is fine
    return np.concatenate([[0], grid]).astype(np.int64)


@dataclass(frozen=True)
class StackedData:
    """Per-dataset float64 numpy arrays: X (D,n,T,d), y (D,n), z (D,n,d), v (D,d)."""

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    v: np.ndarray


def stack_problems(problems: Sequence) -> StackedData:
    """Stack `AttentionProblem`s of equal shape (n, T, d) into arrays with a leading dataset axis."""
    if len(problems) == 0:
        raise MdcertError("no datasets given; pass at least one problem")
    shapes = {(pr.n, pr.T, pr.d) for pr in problems}
    if len(shapes) != 1:
        raise MdcertError(f"all datasets must have the same (n, T, d); got {sorted(shapes)}")
    return StackedData(np.stack([pr.X for pr in problems]), np.stack([pr.y for pr in problems]),
                       np.stack([pr.z for pr in problems]), np.stack([pr.v for pr in problems]))


# ---------------------------------------------------------------------------------------------- kernels
#: logit gap above which the gradient is formed from e^M-scaled weights, per dtype (far from underflow:
#: e^-300 ~ 1e-130 in float64, e^-40 ~ 4e-18 in float32)
SCALE_ABOVE = {torch.float64: 300.0, torch.float32: 40.0}


def _forward(W, Xt, z, h, y, ny=None, gscale=None, arange=None, scaled: bool | None = True):
    """Analytic forward pass of a group (SPEC section 1, logistic loss).

    Args:
        W (B,d,d); Xt (B,n,d,T) tokens transposed; z (B,n,d); h (B,n,T) token values v^T x_it; y (B,n).
        ny, gscale, arange: optional precomputed ``-y``, ``-y/n`` and ``arange(T)``.
        scaled: form ``c`` from the e^M-scaled weights (True), directly with ``M = None`` returned
            (False), or decide on the host: scaled only when ``M > SCALE_ABOVE`` somewhere (None).

    Returns:
        ``a`` attention (B,n,T), ``f`` outputs (B,n), ``g = dL/df`` (B,n), ``c = e^M dL/ds`` (B,n,T)
        and ``M`` (B,1,1) (None when not scaled): the logit derivatives scaled by ``e^M``, where ``M >= 0`` is the smallest
        gap (over the examples) between the top logit and the runner-up. The gradient of every
        example is linear in its non-top attention weights, so the scaled weights
        ``a_t e^M <= 1`` keep the gradient's direction exact to rounding however saturated the
        attention is (``dL/dW = e^-M * sum c x z^T``; normalized steps need only the direction).
    """
    n, T = y.shape[-1], h.shape[-1]
    zW = torch.bmm(z, W.transpose(1, 2))                            # (B,n,d): (W z_i)_j
    s = (Xt * zW.unsqueeze(-1)).sum(dim=-2)                         # (B,n,T) logits
    smax, m = s.max(dim=-1, keepdim=True)
    r = s - smax                                                    # <= 0, exactly 0 at the top token m
    top = (torch.arange(T, device=s.device) if arange is None else arange) == m   # one-hot of m
    M = -r.masked_fill(top, -math.inf).amax(dim=-1, keepdim=True).amax(dim=-2, keepdim=True)
    e = torch.exp(r)                                                # stable: the top token has e = 1
    Z = e.sum(dim=-1, keepdim=True)
    a = e / Z
    hm = h.gather(-1, m)
    D = h - hm                                                      # h_t - h_m (0 at m)
    delta = (a * D).sum(dim=-1, keepdim=True)                       # f - h_m, accurate when saturated
    f = (hm + delta).squeeze(-1)
    g = torch.sigmoid(f * (-y if ny is None else ny)).mul_(-y / n if gscale is None else gscale)
    if scaled is None:                                              # host decision (free on the CPU)
        scaled = bool(M.max() > SCALE_ABOVE.get(s.dtype, 40.0))
    if not scaled:                                                  # no underflow risk: c = a (h - f) g
        return a, f, g, (D - delta).mul_(a).mul_(g.unsqueeze(-1)), None
    a_s = torch.exp((r + M).clamp_max_(0.0)).div_(Z)                # a_t e^M for t != m (<= 1)
    delta_s = (a_s * D).sum(dim=-1, keepdim=True)                   # delta e^M
    c = torch.where(top, a * delta_s.neg_(), a_s.mul_(D - delta)).mul_(g.unsqueeze(-1))
    return a, f, g, c, M


def _grad_W(c, Xt, z):
    """``dL/dW = sum_i (sum_t c_it x_it) z_i^T`` (B,d,d) from Xt (B,n,d,T), z (B,n,d)."""
    gi = (Xt * c.unsqueeze(2)).sum(dim=-1)                          # (B,n,d)
    return torch.bmm(gi.transpose(1, 2), z)


def _grad_v(a, g, X):
    """``dL/dv = sum_i g_i sum_t a_it x_it`` (B,d)."""
    xa = (X * a.unsqueeze(-1)).sum(dim=-2)
    return (g.unsqueeze(-1) * xa).sum(dim=1)


def _loss(f, y):
    return torch.nn.functional.softplus(-y * f).mean(dim=-1)


def _values(X, v):
    """Token values ``h_it = v^T x_it`` (B,n,T)."""
    return (X * v[:, None, None, :]).sum(dim=-1)


def loss_and_grad(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, z: torch.Tensor, v: torch.Tensor):
    """Analytic loss and gradients of a batch, as the engine computes them (SPEC section 1).

    Args:
        W: (B, d, d); X: (B, n, T, d); y: (B, n); z: (B, n, d); v: (B, d).

    Returns:
        ``(loss (B,), dL/dW (B,d,d), dL/dv (B,d), attention (B,n,T))``.
    """
    Xt = X.transpose(-1, -2)
    a, f, g, c, M = _forward(W, Xt, z, _values(X, v), y)
    return _loss(f, y), _grad_W(c, Xt, z).mul_(torch.exp(-M)), _grad_v(a, g, X), a


def _flat(e):
    """A (B,1,1) exponent tensor as (B,1) for decoder vectors (floats pass through)."""
    return e.view(-1, 1) if isinstance(e, torch.Tensor) else e


def _spow(x: torch.Tensor, e) -> torch.Tensor:
    """``sign(x)|x|^e`` with fast paths (1: identity, 2: square, 1/2: sqrt); ``e`` may be a tensor."""
    if isinstance(e, torch.Tensor):
        return x.abs().pow(e).copysign_(x)
    if e == 1.0:
        return x
    ax = x.abs()
    if e == 2.0:
        mag = ax * ax
    elif e == 0.5:
        mag = ax.sqrt()
    else:
        mag = ax.pow(e)
    return mag.copysign_(x)


def _apow(ax: torch.Tensor, e) -> torch.Tensor:
    """``ax**e`` for ``ax >= 0`` with fast paths (2, 1/2, 3/2, 3); ``e`` may be a tensor."""
    if isinstance(e, torch.Tensor):
        return ax.pow(e)
    if e == 2.0:
        return ax * ax
    if e == 1.5:
        return ax * ax.sqrt()
    if e == 3.0:
        return ax * ax * ax
    if e == 0.5:
        return ax.sqrt()
    if e == 1.0:
        return ax
    return ax.pow(e)


def _lpnorm(W: torch.Tensor, p: float, dims) -> torch.Tensor:
    """Entrywise l_p norm with scaling (no overflow/underflow for finite input)."""
    ax = W.abs()
    scale = ax.amax(dim=dims, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (scale * _apow(_apow(ax / safe, p).sum(dim=dims, keepdim=True), 1.0 / p)).flatten()


def _sel(fw: tuple, idx: torch.Tensor) -> tuple:
    return tuple(None if t is None else t.index_select(0, idx) for t in fw)


def _normalize(G: torch.Tensor, q: float, dims) -> tuple[torch.Tensor, torch.Tensor]:
    """``(G / ||G||_q, scale)``: the dual norm is taken after dividing by ``max|G|`` so tiny
    gradients (saturated attention) neither underflow nor lose precision; ``scale = max|G|`` (0
    when the gradient underflowed to exactly zero, NaN/Inf when it is not finite)."""
    ax = G.abs()
    scale = ax.amax(dim=dims, keepdim=True)
    Gs = G / scale
    nrm = _apow(_apow(ax / scale, q).sum(dim=dims, keepdim=True), 1.0 / q)
    return Gs / nrm, scale


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class PathResult:
    """Recorded trajectories (numpy, float64 unless run in float32).

    Attributes:
        p: exact exponent per trajectory (tuple of Fractions, length B).
        lr, steps, data_index: per trajectory (B,).
        record_steps: (B, R) step of each record, -1 where unused.
        W: (B, R, d, d) iterates at the record steps; v: (B, R, d) decoders (None for a fixed decoder).
        loss, norm_p: (B, R); top_attention: (B, R, n) = max_t a_it per example.
        W_final: (B, d, d) the last iterate; v_final: (B, d); attention_final: (B, n, T).
        status: (B,) `TrajectoryStatus` values; stop_step: (B,) steps actually taken.
        saturated_step: (B,) first record step where some example's top attention rounded to exactly
            1.0 (a float limit: that example's gradient is then exactly 0), -1 if never.
        device, dtype: what ran; elapsed_s: wall time of the training loop.
    """

    p: tuple
    lr: np.ndarray
    steps: np.ndarray
    data_index: np.ndarray
    normalize: bool
    record_steps: np.ndarray
    W: np.ndarray
    v: np.ndarray | None
    loss: np.ndarray
    norm_p: np.ndarray
    top_attention: np.ndarray
    W_final: np.ndarray
    v_final: np.ndarray
    attention_final: np.ndarray
    status: np.ndarray
    stop_step: np.ndarray
    saturated_step: np.ndarray
    device: str
    dtype: str
    elapsed_s: float
    notes: tuple = field(default_factory=tuple)

    @property
    def B(self) -> int:
        return len(self.p)

    def final_alpha(self) -> np.ndarray:
        """Token indices read from the final attention, ``argmax_t a_it`` (as the paper does), (B, n)."""
        return np.argmax(self.attention_final, axis=-1)

    def limit_messages(self) -> list[str]:
        """One line per kind of float limit / non-finite stop that occurred."""
        out = []
        for st in (TrajectoryStatus.NONFINITE, TrajectoryStatus.ZERO_GRADIENT):
            idx = np.flatnonzero(self.status == st.value)
            if idx.size:
                what = (f"non-finite gradient or iterate (float limit of {self.dtype} reached)"
                        if st is TrajectoryStatus.NONFINITE else "gradient exactly 0, normalized step undefined")
                out.append(f"{idx.size} trajectories stopped early: {what}; first: #{idx[0]} at step {self.stop_step[idx[0]]}")
        sat = np.flatnonzero(self.saturated_step >= 0)
        if sat.size:
            out.append(f"{sat.size} trajectories reached a top attention weight that rounds to 1.0 in {self.dtype} "
                       f"(first at step {int(self.saturated_step[sat].min())}); the engine keeps their gradient accurate "
                       f"(formed from the small weights), a softmax-backward gradient is rounding noise there")
        return out


# ---------------------------------------------------------------------------------------------- engine
class _Group:
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
        self.Xt = self.X.transpose(-1, -2).contiguous()
        self.ny = -self.y
        self.gscale = -self.y / self.y.shape[-1]
        self.arange = torch.arange(self.X.shape[2], device=device)
        self.Q = _spow(t(W0), self.pm1).clone()
        self.W = self._primal(self.Q)
        self.v = t(v0)
        if self.train_decoder:
            self.Qv = _spow(self.v, _flat(self.pm1)).clone()
            self.v = self._primal(self.Qv)
        B = len(self.gids)
        self.alive = torch.ones(B, dtype=torch.bool, device=device)
        self.count = torch.zeros(B, dtype=torch.int64, device=device)   # steps taken by frozen rows
        self.frozen = False
        self._refresh_decoder()

    _STATE = ("X", "Xt", "z", "y", "ny", "gscale", "Q", "W", "v", "alive", "count")

    def _set_exponents(self, p_rows: list) -> None:
        self.p_list = list(p_rows)
        self.mixed = len(set(p_rows)) > 1
        E = [exponents_of(x) for x in p_rows]
        if self.mixed:                                   # one exponent per row: (B,1,1) tensors
            def col(vals):
                return torch.tensor(vals, dtype=self.dtype, device=self.device).view(-1, 1, 1)

            self.pm1, self.inv_pm1 = col([e.pm1 for e in E]), col([e.inv_pm1 for e in E])
            self.q, self.pp = col([float(x / (x - 1)) for x in p_rows]), col([e.p for e in E])
        else:                                            # scalar exponents: fast paths for 2, 1/2, 3/2
            self.pm1, self.inv_pm1, self.q, self.pp = E[0].pm1, E[0].inv_pm1, float(p_rows[0] / (p_rows[0] - 1)), E[0].p

    def _primal(self, Q):
        e = self.inv_pm1 if Q.dim() == 3 else _flat(self.inv_pm1)
        return Q if (not self.mixed and e == 1.0) else _spow(Q, e)

    def p_rows(self, rows: torch.Tensor):
        """The exponent p of ``rows`` (a float, or a (k,1,1) tensor for a mixed group)."""
        return self.pp.index_select(0, rows) if self.mixed else self.pp

    def _refresh_decoder(self):
        self.h = _values(self.X, self.v)

    def keep(self, mask: np.ndarray) -> torch.Tensor:
        """Keep the rows in ``mask``; returns their index tensor (to slice per-step quantities)."""
        idx = torch.as_tensor(np.flatnonzero(mask), device=self.device)
        self.gids = self.gids[mask]
        for name in self._STATE + (("Qv",) if self.train_decoder else ()):
            setattr(self, name, getattr(self, name).index_select(0, idx))
        self._set_exponents([x for x, k in zip(self.p_list, mask) if k])
        self.frozen = self.device.type != "cpu" or not bool(self.alive.all())
        self._refresh_decoder()
        return idx

    def forward(self):
        """``(a, f, g, c, M)`` at the current iterate (see `_forward`)."""
        return _forward(self.W, self.Xt, self.z, self.h, self.y, self.ny, self.gscale, self.arange,
                        None if self.device.type == "cpu" else True)

    def gradients(self, fw):
        """``(G, Gv, ok)`` at the current iterate: normalized if asked; ``ok`` False where undefined."""
        a, _, g, c, M = fw
        G = _grad_W(c, self.Xt, self.z)                  # e^M dL/dW: only its direction is needed
        Gv = _grad_v(a, g, self.X) if self.train_decoder else None
        if not self.normalize and M is not None:
            G = G * torch.exp(-M)                       # the true gradient (may underflow: a stall)
        if self.normalize:
            G, scale = _normalize(G, self.q, (1, 2))
            h = scale.view(-1)
            ok = torch.isfinite(h) & (h > 0)
            if Gv is not None:
                Gv, sv = _normalize(Gv, _flat(self.q), (1,))
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
        G = _grad_W(c, self.Xt.index_select(0, rows), z)
        fin = torch.isfinite(G).all(dim=(1, 2)) & torch.isfinite(self.W.index_select(0, rows)).all(dim=(1, 2))
        zero = (G == 0).all(dim=(1, 2))
        if self.train_decoder:
            Gv = _grad_v(a, g, X)
            fin &= torch.isfinite(Gv).all(dim=1)
            zero |= (Gv == 0).all(dim=1)
        lim = (fin & zero).cpu().numpy() & self.normalize
        return np.where(lim, TrajectoryStatus.ZERO_GRADIENT.value, TrajectoryStatus.NONFINITE.value)

    def step(self, fw, k: int) -> None:
        """Mirror step k -> k+1: ``Q <- Q - eta G``, ``W = grad psi^{-1}(Q)`` (SPEC section 2).

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
            G = torch.where(self.alive.view(-1, 1, 1), G, torch.zeros((), dtype=G.dtype, device=G.device))
        self.Q.add_(G, alpha=-self.lr)
        self.W = self._primal(self.Q)
        if self.train_decoder:
            if self.frozen:
                Gv = torch.where(self.alive.view(-1, 1), Gv, torch.zeros((), dtype=Gv.dtype, device=Gv.device))
            self.Qv.add_(Gv, alpha=-self.v_lr)
            self.v = self._primal(self.Qv)
            self._refresh_decoder()


def _progress_printer(enabled: bool, total: int):
    state = {"last": 0.0, "t0": time.perf_counter()}

    def show(k: int, active: int, final: bool = False) -> None:
        if not enabled:
            return
        now = time.perf_counter()
        if not final and now - state["last"] < 0.5:
            return
        state["last"] = now
        frac = k / max(total, 1)
        el = now - state["t0"]
        eta = el * (1 - frac) / frac if frac > 0 else 0.0
        sys.stderr.write(f"\rpaths [{'#' * int(30 * frac):<30}] step {k}/{total}  active {active}  "
                         f"{el:6.1f}s  eta {eta:6.1f}s")
        if final:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


class _Recorder:
    """Host-side arrays of the recorded quantities."""

    def __init__(self, B, R, n, T, d, train_decoder, on_finish=None):
        self.on_finish = on_finish
        self.rec_steps = np.full((B, R), -1, dtype=np.int64)
        self.W = np.full((B, R, d, d), np.nan)
        self.v = np.full((B, R, d), np.nan) if train_decoder else None
        self.loss = np.full((B, R), np.nan)
        self.norm = np.full((B, R), np.nan)
        self.top = np.full((B, R, n), np.nan)
        self.W_final = np.full((B, d, d), np.nan)
        self.v_final = np.full((B, d), np.nan)
        self.att_final = np.full((B, n, T), np.nan)
        self.status = np.array([TrajectoryStatus.OK.value] * B, dtype=object)
        self.stop_step = np.zeros(B, dtype=np.int64)
        self.sat_step = np.full(B, -1, dtype=np.int64)

    def take(self, g: _Group, rows: torch.Tensor, gids: np.ndarray, slots: np.ndarray, fw, k) -> None:
        a, f = fw[0], fw[1]
        Wk = g.W.index_select(0, rows)
        norm = _lpnorm(Wk, g.p_rows(rows), (1, 2))
        ls = _loss(f.index_select(0, rows), g.y.index_select(0, rows))
        top = a.index_select(0, rows).amax(dim=-1)
        Wn, nn_, ln, tn = (x.detach().cpu().numpy().astype(np.float64) for x in (Wk, norm, ls, top))
        self.W[gids, slots] = Wn
        self.norm[gids, slots] = nn_
        self.loss[gids, slots] = ln
        self.top[gids, slots] = tn
        self.rec_steps[gids, slots] = k
        if self.v is not None:
            self.v[gids, slots] = g.v.index_select(0, rows).cpu().numpy()
        sat = np.any(tn == 1.0, axis=-1) & (self.sat_step[gids] < 0)
        self.sat_step[gids[sat]] = np.broadcast_to(k, gids.shape)[sat]

    def finish(self, g: _Group, rows: torch.Tensor, gids: np.ndarray, fw, steps_taken: np.ndarray,
               status) -> None:
        a = fw[0]
        self.W_final[gids] = g.W.index_select(0, rows).cpu().numpy()
        self.v_final[gids] = g.v.index_select(0, rows).cpu().numpy()
        self.att_final[gids] = a.index_select(0, rows).cpu().numpy()
        self.stop_step[gids] = steps_taken
        self.status[gids] = status
        if self.on_finish is not None:
            self.on_finish(gids.copy(), self.W_final[gids], self.att_final[gids])


def _validate(problems, data_index, p, lr, steps, W0, v0, decoder_lr):
    data = stack_problems(problems)
    D, n, T, d = data.X.shape
    B = len(p)
    if B == 0:
        raise MdcertError("no trajectories to run; give at least one p")
    lens = {"data_index": len(data_index), "lr": len(lr), "steps": len(steps)}
    bad = {k: v for k, v in lens.items() if v != B}
    if bad:
        raise MdcertError(f"per-trajectory lists must all have length {B} (= len(p)); got {bad}")
    ps = tuple(parse_p(x) for x in p)
    lr_a = np.asarray(lr, dtype=np.float64)
    st_a = np.asarray(steps, dtype=np.int64)
    di = np.asarray(data_index, dtype=np.int64)
    if np.any(~np.isfinite(lr_a) | (lr_a <= 0)):
        raise MdcertError(f"step sizes must be finite and > 0; got {lr_a[~np.isfinite(lr_a) | (lr_a <= 0)][0]}")
    if np.any(st_a < 0):
        raise MdcertError(f"step counts must be >= 0; got {int(st_a.min())}")
    if np.any((di < 0) | (di >= D)):
        raise MdcertError(f"data_index out of range 0..{D - 1}")
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.shape != (B, d, d):
        raise MdcertError(f"W0 must have shape ({B}, {d}, {d}), got {W0.shape}")
    if not np.all(np.isfinite(W0)):
        raise MdcertError("W0 contains NaN or Inf; give a finite initialization")
    v0 = data.v[di] if v0 is None else np.asarray(v0, dtype=np.float64)
    if v0.shape != (B, d) or not np.all(np.isfinite(v0)):
        raise MdcertError(f"v0 must be a finite array of shape ({B}, {d})")
    vlr = lr_a.copy() if decoder_lr is None else np.broadcast_to(np.asarray(decoder_lr, dtype=np.float64), (B,)).copy()
    if np.any(~np.isfinite(vlr) | (vlr <= 0)):
        raise MdcertError("decoder step sizes must be finite and > 0")
    return data, ps, lr_a, st_a, di, W0, v0, vlr


def run_paths(problems: Sequence, *, data_index: Sequence[int], p: Sequence, lr: Sequence[float],
              steps: Sequence[int], W0: np.ndarray, normalize: bool = False, train_decoder: bool = False,
              v0: np.ndarray | None = None, decoder_lr: float | Sequence[float] | None = None,
              device: str | torch.device = "cpu", dtype: str | torch.dtype = "float64", records: int = 64,
              progress: bool | None = None, check_every: int = 64, threads: int | None = 1,
              on_finish: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
              group_by_p: bool | None = None) -> PathResult:
    """Run B mirror-descent trajectories at once (SPEC section 2) and record them at log-spaced steps.

    Args:
        problems: datasets (equal n, T, d); trajectory b uses ``problems[data_index[b]]``.
        data_index, p, lr, steps: per trajectory, length B (p parsed exactly, e.g. "1.75").
        W0: (B, d, d) initial attention matrices.
        normalize: divide each gradient by its dual norm ``||G||_q`` (SPEC section 2 option).
        train_decoder: also train ``v`` (same mirror map, its own step ``decoder_lr``; default lr).
        v0: (B, d) initial decoders (default: each dataset's v).
        device: "auto" | "cpu" | "cuda"; dtype: "float64" (default) | "float32".
        records: recording points per trajectory (log-spaced, including 0 and the last step).
        progress: progress bar on stderr (default: only when stderr is a TTY).
        check_every: host check of the device-side stop flags every this many steps (results do not
            depend on it: stopped rows are frozen on the device until retired).
        on_finish: called as ``on_finish(ids, W_final, attention_final)`` as soon as trajectories end
            (e.g. to start their SVM certificates while longer trajectories still run).
        group_by_p: one group (one tensor program) per distinct (p, lr) with scalar exponents (fast
            paths for p = 2, 3), or per lr only with per-row exponent tensors (fewer kernel launches:
            the default on CUDA, where a step is launch-bound). Results agree to rounding.
        threads: torch intra-op threads on the CPU during the run (default 1: the tensors are small,
            and on a busy machine OpenMP threads waiting for each other cost 10x; None: leave as is).

    Returns:
        `PathResult`.

    Raises:
        MdcertError: inconsistent lengths, p <= 1, negative steps, non-positive lr, bad shapes/device.
    """
    dev = resolve_device(device)
    dt = _dtype(dtype)
    if not isinstance(records, (int, np.integer)) or records < 2:
        raise MdcertError(f"records must be an integer >= 2, got {records!r}")
    data, ps, lr_a, st_a, di, W0, v0, vlr = _validate(problems, data_index, p, lr, steps, W0, v0, decoder_lr)
    B = len(ps)
    _, n, T, d = data.X.shape
    check_every = max(1, int(check_every))
    if progress is None:
        progress = sys.stderr.isatty()

    scheds = {int(K): record_schedule(int(K), records) for K in np.unique(st_a)}
    R = max(len(s) for s in scheds.values()) + 1          # one spare slot for an early stop
    rec = _Recorder(B, R, n, T, d, train_decoder, on_finish)
    rec_at: dict[int, list[tuple[int, int]]] = {}
    for b in range(B):
        for slot, k in enumerate(scheds[int(st_a[b])]):
            rec_at.setdefault(int(k), []).append((b, slot))

    if group_by_p is None:
        group_by_p = dev.type == "cpu"
    keys: dict[tuple, list[int]] = {}
    for b in range(B):
        keys.setdefault(((ps[b],) if group_by_p else ()) + (float(lr_a[b]), float(vlr[b])), []).append(b)
    groups = []
    for key, members in keys.items():
        mem = np.asarray(members)
        lk, vk = key[-2], key[-1]
        gdata = {"X": data.X[di[mem]], "z": data.z[di[mem]], "y": data.y[di[mem]]}
        groups.append(_Group(mem, [ps[b] for b in mem], lk, gdata, W0[mem], v0[mem], normalize, train_decoder, vk,
                             dev, dt))

    saved_threads = torch.get_num_threads()
    if threads is not None and dev.type == "cpu":
        torch.set_num_threads(int(threads))
    try:
        return _loop(groups, rec, rec_at, scheds, st_a, dev, dt, check_every, progress, ps, lr_a, di, normalize)
    finally:
        torch.set_num_threads(saved_threads)


def _loop(groups, rec, rec_at, scheds, st_a, dev, dt, check_every, progress, ps, lr_a, di, normalize) -> PathResult:
    K_max = int(st_a.max())
    show = _progress_printer(bool(progress), K_max)
    t0 = time.perf_counter()
    k = 0
    active = groups
    while active:
        still = []
        for g in active:
            fw = g.forward()
            ends = st_a[g.gids] == k
            if k % check_every == 0 or k in rec_at or ends.any():
                alive = g.alive.cpu().numpy()
                if not alive.all():                      # retire stopped rows at their frozen iterate
                    dead = ~alive
                    rows = torch.as_tensor(np.flatnonzero(dead), device=dev)
                    gids = g.gids[dead]
                    taken = g.count.index_select(0, rows).cpu().numpy()
                    why = g.stop_reason(_sel(fw, rows), rows)
                    slots = np.array([int(np.searchsorted(scheds[int(st_a[b])], taken[j], side="left"))
                                      for j, b in enumerate(gids)])
                    for j, b in enumerate(gids):             # schedule entries after the stop are dropped
                        rec.rec_steps[b, slots[j]:] = -1
                    rec.take(g, rows, gids, slots, fw, taken)
                    rec.finish(g, rows, gids, fw, taken, why)
                    if dead.all():
                        continue
                    idx = g.keep(alive)
                    fw, ends = _sel(fw, idx), ends[alive]
                want = rec_at.get(k)
                if want:
                    pos = {int(b): i for i, b in enumerate(g.gids)}
                    sel = [(b, s) for b, s in want if b in pos]
                    if sel:
                        gids = np.array([b for b, _ in sel])
                        slots = np.array([s for _, s in sel])
                        rows = torch.as_tensor([pos[b] for b in gids], device=dev)
                        rec.take(g, rows, gids, slots, fw, k)
                if ends.any():
                    rows = torch.as_tensor(np.flatnonzero(ends), device=dev)
                    gids = g.gids[ends]
                    rec.finish(g, rows, gids, fw, np.full(len(gids), k), TrajectoryStatus.OK.value)
                    if ends.all():
                        continue
                    fw = _sel(fw, g.keep(~ends))
            g.step(fw, k)
            still.append(g)
        active = still
        show(k, sum(len(g.gids) for g in active))
        k += 1
    show(K_max, 0, final=True)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elapsed = time.perf_counter() - t0
    res = PathResult(p=ps, lr=lr_a, steps=st_a, data_index=di, normalize=bool(normalize), record_steps=rec.rec_steps,
                     W=rec.W, v=rec.v, loss=rec.loss, norm_p=rec.norm, top_attention=rec.top, W_final=rec.W_final,
                     v_final=rec.v_final, attention_final=rec.att_final, status=rec.status.astype(str),
                     stop_step=rec.stop_step, saturated_step=rec.sat_step, device=str(dev),
                     dtype=str(dt).replace("torch.", ""), elapsed_s=elapsed)
    object.__setattr__(res, "notes", tuple(res.limit_messages()))
    return res


# ---------------------------------------------------------------------------------------------- analysis
def directional_bregman(W: np.ndarray, record_steps: np.ndarray, reference: np.ndarray, p: Sequence) -> np.ndarray:
    """``D_psi(Wbar_ref, Wbar(k))`` for every recorded iterate (SPEC section 2; reference first).

    Both matrices are normalized in the entrywise p-norm of their trajectory; evaluated with the
    cancellation-free entrywise form of `certify.lp.bregman` (float64: evidence of nothing, a
    measurement). Rows whose reference is NaN (infeasible or uncertified SVM) give NaN.

    Args:
        W: (B, R, d, d) recorded iterates; record_steps: (B, R), -1 where unused.
        reference: (B, d, d) reference directions; p: exponent per trajectory (length B).

    Returns:
        (B, R) array, NaN where unrecorded.
    """
    from certify.lp import bregman, lp_normalize

    B, R = record_steps.shape
    out = np.full((B, R), np.nan)
    ps = [parse_p(x) for x in p]
    valid = (record_steps >= 0) & np.all(np.isfinite(W), axis=(-2, -1)) & np.all(np.isfinite(reference), axis=(-2, -1))[:, None]
    nonzero = np.any(W != 0, axis=(-2, -1))
    valid &= nonzero
    for pv in sorted(set(ps)):
        rows = np.array([i for i in range(B) if ps[i] == pv], dtype=np.int64)
        vb, vr = np.nonzero(valid[rows])
        if vb.size == 0:
            continue
        b = rows[vb]
        Wn = lp_normalize(W[b, vr], pv, axis=(-2, -1))
        ref = lp_normalize(reference[b], pv, axis=(-2, -1))
        out[b, vr] = bregman(ref, Wn, pv, axis=(-2, -1))
    return out
