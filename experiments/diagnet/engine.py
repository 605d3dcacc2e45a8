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

__all__ = ["Rule", "DiagConfig", "DiagStatus", "DiagResult", "run_diag_paths"]


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
            raise MdcertError(f"steps must be in 1..1e9 and record_every >= 1, got {self.steps}, {self.record_every}")
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
    eps: np.ndarray         #: (B,)
    alpha: np.ndarray       #: (B,)
    lr: np.ndarray          #: (B,)
    w_plus: np.ndarray      #: (B, D) final weights
    w_minus: np.ndarray     #: (B, D)
    record_steps: np.ndarray  #: (R,)
    loss: np.ndarray        #: (B, R) loss at the recorded steps (inf after a non-finite stop)
    beta: np.ndarray        #: (B, R, D)
    t0_step: np.ndarray     #: (B,) first step with max |dL/dv| <= eps, -1 if never
    t_step: np.ndarray      #: (B,) first step with min |dL/du| <= eps, -1 if never
    stop_step: np.ndarray   #: (B,) the step where a trajectory stopped (steps when it finished)
    status: tuple[DiagStatus, ...]
    lr_vs_eps: np.ndarray   #: (B,) bool: lr > eps (the discrete path need not follow the ODE)

    @property
    def beta_final(self) -> np.ndarray:
        return self.w_plus ** self.config.depth - self.w_minus ** self.config.depth


def _grads(X: torch.Tensor, XT: torch.Tensor, y: torch.Tensor, wp: torch.Tensor, wm: torch.Tensor, H: int):
    """(residual, dL/dw+, dL/dw-) for ``L = ||X beta - y||^2 / 4``, beta = w+^H - w-^H."""
    beta = wp * wp - wm * wm if H == 2 else wp ** H - wm ** H
    r = beta @ XT - y                       # (B, N)
    gb = r @ X                              # 2 dL/dbeta, (B, D)
    gp = (wp if H == 2 else (H / 2) * wp ** (H - 1)) * gb
    gm = -(wm if H == 2 else (H / 2) * wm ** (H - 1)) * gb
    return r, gp, gm


def run_diag_paths(problem: RegressionProblem, config: DiagConfig, *, device: str = "cpu") -> DiagResult:
    """Train every trajectory of ``config`` on ``problem`` (module docstring)."""
    grid = config.grid()
    B, D, H = len(grid), problem.D, config.depth
    dt = torch.float64
    X = torch.tensor(np.array(problem.X), dtype=dt, device=device)
    y = torch.tensor(np.array(problem.y), dtype=dt, device=device)
    XT = X.T.contiguous()
    eps = torch.tensor([g[0] for g in grid], dtype=dt, device=device)[:, None]
    alpha = torch.tensor([g[1] for g in grid], dtype=dt, device=device)[:, None]
    lr = torch.tensor([g[2] for g in grid], dtype=dt, device=device)[:, None]
    wp = alpha.expand(B, D).clone()
    wm = alpha.expand(B, D).clone()
    m_p, m_m = torch.zeros_like(wp), torch.zeros_like(wm)
    v_p, v_m = torch.zeros_like(wp), torch.zeros_like(wm)
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
    ri = 0
    prev_p, prev_m = wp, wm
    lr_live = lr
    every = config.check_every
    for k in range(config.steps + 1):
        r, gp, gm = _grads(X, XT, y, wp, wm, H)
        checked = k % every == 0 or k == config.steps or (ri < R and rec[ri] == k)
        if checked:
            loss = (r * r).sum(dim=1) / 4
            finite = torch.isfinite(loss) & torch.isfinite(gp).all(1) & torch.isfinite(gm).all(1)
            dead = alive & ~finite  # stops at this check: back to the weights of the previous check
            stop = torch.where(dead, k, stop)
            alive = alive & finite
            if dead.any():  # restore, and take the gradients there (0 * inf would give NaN)
                wp = torch.where(dead[:, None], prev_p, wp)
                wm = torch.where(dead[:, None], prev_m, wm)
                r, gp, gm = _grads(X, XT, y, wp, wm, H)
            prev_p, prev_m = wp, wm
            # stage times: u the dominant weight of each coordinate, v the other
            dom = wp.abs() >= wm.abs()
            gv_max = torch.where(dom, gm, gp).abs().amax(1)
            gu_min = torch.where(dom, gp, gm).abs().amin(1)
            t0 = torch.where(alive & (t0 < 0) & (gv_max <= eps[:, 0]), k, t0)
            t_stage = torch.where(alive & (t_stage < 0) & (gu_min <= eps[:, 0]), k, t_stage)
            lr_live = lr * alive[:, None]  # a stopped trajectory no longer moves
        if ri < R and rec[ri] == k:
            a = alive.cpu()
            loss_rec[a, ri] = loss[alive].cpu()
            beta_rec[a, ri] = (wp[alive] ** H - wm[alive] ** H).cpu()
            ri += 1
            if not a.any():
                break
        if k == config.steps:
            break
        if config.rule is Rule.GD:
            sp, sm = gp, gm
        elif config.rule is Rule.SIGN:
            sp, sm = gp / (gp.abs() + eps), gm / (gm.abs() + eps)
        else:
            m_p.mul_(b1).add_(gp, alpha=1 - b1)
            m_m.mul_(b1).add_(gm, alpha=1 - b1)
            v_p.mul_(b2).addcmul_(gp, gp, value=1 - b2)
            v_m.mul_(b2).addcmul_(gm, gm, value=1 - b2)
            c1, c2 = 1 - b1 ** (k + 1), 1 - b2 ** (k + 1)
            sp = (m_p / c1) / ((v_p / c2).sqrt() + eps)
            sm = (m_m / c1) / ((v_m / c2).sqrt() + eps)
        wp = wp - lr_live * sp
        wm = wm - lr_live * sm
    t0, t_stage, stop = t0.cpu(), t_stage.cpu(), stop.cpu()
    status = tuple(DiagStatus.FINISHED if s == config.steps else DiagStatus.NONFINITE for s in stop.tolist())
    eps_np, lr_np = eps[:, 0].cpu().numpy(), lr[:, 0].cpu().numpy()
    return DiagResult(config, eps_np, alpha[:, 0].cpu().numpy(), lr_np, wp.cpu().numpy(), wm.cpu().numpy(),
                      np.array(rec), loss_rec.numpy(), beta_rec.numpy(), t0.numpy(), t_stage.numpy(), stop.numpy(),
                      status, lr_np > eps_np)
