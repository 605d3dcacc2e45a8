"""Batched training paths of diagonal linear networks (docs/theory.md section 8.5).

The model of arXiv 2410.14158: ``beta = w+^H - w-^H`` (depth H, the paper's H = 2), loss
``L = ||X beta - y||^2 / 4``, initialization ``w+- = alpha 1`` (so beta(0) = 0). B trajectories (the
grid eps x alpha x lr, one rule) run as one float64 tensor program of shape (B, D):

- ``gd``: ``w <- w - lr g``;
- ``sign``: smoothed sign descent ``w <- w - lr g / (|g| + eps)`` (the paper's eq. 15);
- ``adam``: Adam with ``betas`` (bias-corrected, ``lr m^ / (sqrt(v^) + eps)``); ``betas = (0, 0)`` is
  ``sign`` wherever ``g*g`` is a normal float.

Recorded per trajectory: the loss and beta every ``record_every`` steps, the stage times of the
paper (``T0``: the first checked step where ``max_i |dL/dv_i| <= eps``, v the non-dominant weight;
``T``: the first checked step where ``min_i |dL/du_i| <= eps``, u the dominant one; steps are checked
every ``check_every`` steps, so each is at most ``check_every - 1`` steps late), the final weights, and
a status: a trajectory whose gradient becomes non-finite stops at the check that sees it, with the
weights of the previous check (status ``nonfinite``, the step recorded); nothing is ever NaN in the
result. ``lr_vs_eps`` flags trajectories whose step is not
small against eps (``lr > eps``): their discrete path need not follow the ODE the paper analyses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch

from certify.errors import MdcertError
from certify.regression.problem import RegressionProblem

__all__ = ["DiagConfig", "DiagResult", "DiagStatus", "Rule", "run_diag_paths"]


class Rule(Enum):
    GD = "gd"
    SIGN = "sign"
    ADAM = "adam"


class DiagStatus(Enum):
    FINISHED = "finished"
    NONFINITE = "nonfinite"


@dataclass(frozen=True)
class DiagConfig:
    """One rule over the grid eps x alpha x lr (every combination is a trajectory)."""

    rule: Rule
    eps: tuple[float, ...] = (1e-2,)
    alpha: tuple[float, ...] = (0.1,)
    lr: tuple[float, ...] = (1e-3,)
    steps: int = 10_000
    record_every: int = 100
    check_every: int = 8
    depth: int = 2
    betas: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        for name in ("eps", "alpha", "lr"):
            vals = getattr(self, name)
            if not vals or any(not (np.isfinite(v) and v > 0) for v in vals):
                raise MdcertError(f"{name} values must be finite and positive, got {list(vals)}")
        if not 1 <= self.steps <= 10**9 or not 1 <= self.record_every or not 1 <= self.check_every:
            raise MdcertError(
                f"steps must be in 1..1e9 and record_every >= 1, got {self.steps}, {self.record_every}"
            )
        if self.depth < 2:
            raise MdcertError(f"depth must be at least 2, got {self.depth}")
        if not all(0 <= b < 1 for b in self.betas):
            raise MdcertError(f"Adam betas must lie in [0, 1), got {self.betas}")

    def grid(self) -> list[tuple[float, float, float]]:
        return [(e, a, l) for e in self.eps for a in self.alpha for l in self.lr]


@dataclass(frozen=True)
class DiagResult:
    """Arrays over trajectories b (grid order of `DiagConfig.grid`)."""

    config: DiagConfig
    eps: np.ndarray  #: (B,)
    alpha: np.ndarray  #: (B,)
    lr: np.ndarray  #: (B,)
    w_plus: np.ndarray  #: (B, D) final weights
    w_minus: np.ndarray  #: (B, D)
    record_steps: np.ndarray  #: (R,)
    loss: np.ndarray  #: (B, R) loss at the recorded steps (inf after a non-finite stop)
    beta: np.ndarray  #: (B, R, D)
    t0_step: np.ndarray  #: (B,) first step with max |dL/dv| <= eps, -1 if never
    t_step: np.ndarray  #: (B,) first step with min |dL/du| <= eps, -1 if never
    stop_step: np.ndarray  #: (B,) the step where a trajectory stopped (steps when it finished)
    status: tuple[DiagStatus, ...]
    lr_vs_eps: np.ndarray  #: (B,) bool: lr > eps (the discrete path need not follow the ODE)

    @property
    def beta_final(self) -> np.ndarray:
        return self.w_plus**self.config.depth - self.w_minus**self.config.depth


def _thread_count(elements: int, threads: int | None) -> int:
    """Torch threads for a batch of ``elements`` state entries: one below 2^18 entries (the ops then
    last microseconds and thread hand-offs cost more than they save; on a loaded machine extra threads
    only oversubscribe), else the caller's count or torch's."""
    if threads is not None:
        if threads < 1:
            raise MdcertError(f"threads must be at least 1, got {threads}")
        return threads
    return 1 if elements < 2**18 else torch.get_num_threads()


def run_diag_paths(
    problem: RegressionProblem,
    config: DiagConfig,
    *,
    device: str = "cpu",
    threads: int | None = None,
) -> DiagResult:
    """Train every trajectory of ``config`` on ``problem`` (module docstring). ``threads``: torch's
    intra-op threads during the run (default: `_thread_count`); restored afterwards."""
    B, D = len(config.grid()), problem.D
    before = torch.get_num_threads()
    torch.set_num_threads(_thread_count(B * 2 * D, threads))
    try:
        with torch.no_grad():
            return _run(problem, config, device)
    finally:
        torch.set_num_threads(before)


def _run(problem: RegressionProblem, config: DiagConfig, device: str) -> DiagResult:
    grid = config.grid()
    B, D, H = len(grid), problem.D, config.depth
    dt = torch.float64
    X = torch.tensor(np.array(problem.X), dtype=dt, device=device)
    # the state is W = [w+ | w-] (B, 2D). The residual is kept transposed, r^T = X beta^T - y (N, B):
    # MKL's product is about twice as fast in that layout for narrow N; then G = r @ [X, -X] and
    # (2/H) dL/dW = W^(H-1) * G: elementwise ops on one (B, 2D) tensor, two products per step
    XX = torch.cat([X, -X], dim=1).contiguous()  # (N, 2D)
    neg_y = -torch.tensor(np.array(problem.y), dtype=dt, device=device)[:, None]  # (N, 1)
    eps = torch.tensor([g[0] for g in grid], dtype=dt, device=device)[:, None]
    alpha = torch.tensor([g[1] for g in grid], dtype=dt, device=device)[:, None]
    lr = torch.tensor([g[2] for g in grid], dtype=dt, device=device)[:, None]
    W = alpha.expand(B, 2 * D).clone()
    sq, g, a = torch.empty_like(W), torch.empty_like(W), torch.empty_like(W)
    rT = torch.empty((problem.N, B), dtype=dt, device=device)
    beta = torch.empty((B, D), dtype=dt, device=device)
    G = torch.empty_like(W)
    m, v = torch.zeros_like(W), torch.zeros_like(W)
    b1, b2 = config.betas
    rec = list(range(0, config.steps + 1, config.record_every))
    if rec[-1] != config.steps:
        rec.append(config.steps)
    R = len(rec)
    loss_rec = torch.full((B, R), float("inf"), dtype=dt)
    beta_rec = torch.zeros((B, R, D), dtype=dt)
    # per-trajectory state on the device, updated without host synchronization
    never = torch.full((B,), -1, dtype=torch.long, device=device)
    t0, t_stage = never.clone(), never.clone()
    stop = torch.full((B,), config.steps, dtype=torch.long, device=device)
    alive = torch.ones(B, dtype=torch.bool, device=device)
    all_alive = True
    uniform_lr = len(set(config.lr)) == 1
    lr_scalar = config.lr[0]
    lr_live = lr
    ri = 0
    prev = W.clone()
    every = config.check_every

    def grads() -> None:  # r^T, then g = dL/dW (both halves) into the buffers
        if H == 2:
            torch.mul(W, W, out=sq)
        else:
            torch.pow(W, H, out=sq)
        torch.sub(sq[:, :D], sq[:, D:], out=beta)
        torch.addmm(neg_y, X, beta.T, out=rT)
        torch.mm(rT.T, XX, out=G)
        if H == 2:
            torch.mul(W, G, out=g)
        else:
            torch.pow(W, H - 1, out=g)
            g.mul_(G).mul_(H / 2)

    for k in range(config.steps + 1):
        grads()
        checked = k % every == 0 or k == config.steps or (ri < R and rec[ri] == k)
        if checked:
            loss = (rT * rT).sum(dim=0) / 4
            finite = torch.isfinite(loss) & torch.isfinite(g).all(1)
            dead = alive & ~finite  # stops at this check: back to the weights of the previous check
            if bool(dead.any()):  # restore, and take the gradients there (0 * inf would give NaN)
                stop = torch.where(dead, k, stop)
                alive = alive & finite
                all_alive = False
                W.copy_(torch.where(dead[:, None], prev, W))
                grads()
                loss = (rT * rT).sum(dim=0) / 4
                lr_live = lr * alive[:, None]  # a stopped trajectory no longer moves
            prev.copy_(W)
            # stage times: u the dominant weight of each coordinate, v the other
            gp, gm = g[:, :D], g[:, D:]
            dom = W[:, :D].abs() >= W[:, D:].abs()
            gv_max = torch.where(dom, gm, gp).abs().amax(1)
            gu_min = torch.where(dom, gp, gm).abs().amin(1)
            t0 = torch.where(alive & (t0 < 0) & (gv_max <= eps[:, 0]), k, t0)
            t_stage = torch.where(alive & (t_stage < 0) & (gu_min <= eps[:, 0]), k, t_stage)
        if ri < R and rec[ri] == k:
            al = alive.cpu()
            loss_rec[al, ri] = loss[alive].cpu()
            beta_rec[al, ri] = (W[alive, :D] ** H - W[alive, D:] ** H).cpu()
            ri += 1
            if not al.any():
                break
        if k == config.steps:
            break
        if config.rule is Rule.GD:
            if uniform_lr and all_alive:
                W.add_(g, alpha=-lr_scalar)
            else:
                W.addcmul_(g, lr_live, value=-1)
            continue
        if config.rule is Rule.SIGN:  # g / (|g| + eps)
            num = g
            torch.abs(g, out=a).add_(eps)
        else:  # Adam, bias-corrected: (m / c1) / (sqrt(v / c2) + eps)
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            c1, c2 = 1 - b1 ** (k + 1), 1 - b2 ** (k + 1)
            num = m / c1
            torch.div(v, c2, out=a).sqrt_().add_(eps)
        if uniform_lr and all_alive:
            W.addcdiv_(num, a, value=-lr_scalar)
        else:
            W.addcdiv_(num * lr_live, a, value=-1)
    t0, t_stage, stop = t0.cpu(), t_stage.cpu(), stop.cpu()
    status = tuple(
        DiagStatus.FINISHED if s == config.steps else DiagStatus.NONFINITE for s in stop.tolist()
    )
    eps_np, lr_np = eps[:, 0].cpu().numpy(), lr[:, 0].cpu().numpy()
    Wn = W.cpu().numpy()
    return DiagResult(
        config,
        eps_np,
        alpha[:, 0].cpu().numpy(),
        lr_np,
        Wn[:, :D].copy(),
        Wn[:, D:].copy(),
        np.array(rec),
        loss_rec.numpy(),
        beta_rec.numpy(),
        t0.numpy(),
        t_stage.numpy(),
        stop.numpy(),
        status,
        lr_np > eps_np,
    )
