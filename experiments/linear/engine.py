"""Batched p-GD paths of a linear classifier (docs/theory.md sections 2.3 and 7.5).

p-GD is mirror descent with ``psi(w) = ||w||_p^p / p`` (the step of `experiments.optim.LpMirrorDescent`:
``grad psi(w) = sign(w)|w|^(p-1)``) on the mean row loss ``L(w) = (1/N) sum_j l(a_j^T w)`` of a
`certify.ClassificationProblem` (rows ``a_j``: ``y_i x_i`` binary, the Crammer-Singer rows multiclass;
``l`` exponential ``e^-u`` or logistic ``log(1 + e^-u)``). B trajectories, the grid p x step size x
initialization, run as one float64 tensor program of shape (B, m), each with its own exponent.

Never NaN. The gradient is ``-(1/N) sum_j c_j a_j`` with positive weights ``c_j = -l'(M_j)``, margins
``M_j = a_j^T w``; the engine factors out ``e^(-m0)`` (``m0`` the smallest margin, at least 0 for the
logistic loss) and forms the scaled weights ``e^(m0 - M_j)`` (times ``sigmoid(M_j)`` for the logistic
loss), the largest of which is about 1, so the gradient's direction survives float64 underflow of the
gradient itself (the attention engine's device, `experiments.paths.kernels`). Normalized steps use the
scaled gradient divided by its dual norm ``||.||_q`` and never underflow; a constant step multiplies by
``eta e^(-m0)/N`` and, once that step is below the float64 resolution of the dual iterate, the
trajectory is marked ``stalled`` (it no longer moves; its records stay finite). A trajectory whose
iterate becomes non-finite is frozen at its last finite record with status ``nonfinite``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch

from certify.classification import ClassificationProblem
from certify.errors import MdcertError

__all__ = [
    "MAX_ROW_ENTRIES",
    "Loss",
    "PgdConfig",
    "PgdPaths",
    "PgdStatus",
    "float_rows",
    "record_steps",
    "run_pgd_paths",
    "scaled_weights",
]

#: largest N x m float row matrix the engine forms (multiclass rows are dense: n (K-1) x K d)
MAX_ROW_ENTRIES = 50_000_000


class Loss(str, Enum):
    EXPONENTIAL = "exponential"
    LOGISTIC = "logistic"


class PgdStatus(str, Enum):
    FINISHED = "finished"  #: ran every step, moving to the end
    STALLED = "stalled"  #: a constant step fell below the float64 resolution of the iterate
    NONFINITE = "nonfinite"  #: the iterate became non-finite; frozen at its last finite record


def _positive(values, option: str) -> tuple[float, ...]:
    out = tuple(float(v) for v in values)
    if not out:
        raise MdcertError(f"{option} is empty; give at least one value")
    bad = [v for v in out if not (math.isfinite(v) and v > 0)]
    if bad:
        raise MdcertError(f"{option} values must be finite and > 0, got {bad[0]!r}")
    return out


@dataclass(frozen=True)
class PgdConfig:
    """The grid p x lr x init (every combination is a trajectory, p slowest).

    Attributes:
        ps: exponents p > 1 (at most 20: the potential's powers beyond that over/underflow).
        lrs: step sizes > 0.
        inits: initializations per (p, lr): ``init_scale`` times seeded standard normals (the first is
            w(0) = 0 when ``init_scale`` is 0).
        loss: `Loss`; normalize: divide the gradient by its dual norm (docs/theory.md section 2.3).
        steps: steps per trajectory; records: record points, log-spaced in 1..steps (step 0 too).
        seed: seed of the initializations.
    """

    ps: tuple[float, ...] = (1.5, 2.0, 3.0)
    lrs: tuple[float, ...] = (0.1,)
    inits: int = 8
    init_scale: float = 0.0
    loss: Loss = Loss.EXPONENTIAL
    normalize: bool = False
    steps: int = 10_000
    records: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        ps = _positive(self.ps, "--p")
        bad = [p for p in ps if not 1.0 < p <= 20.0]
        if bad:
            raise MdcertError(f"--p values must lie in (1, 20], got {bad[0]!r}")
        object.__setattr__(self, "ps", ps)
        object.__setattr__(self, "lrs", _positive(self.lrs, "--lr"))
        object.__setattr__(self, "loss", Loss(self.loss))
        for name, lo, hi in (("inits", 1, 4096), ("steps", 1, 10**9), ("records", 2, 10_000)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise MdcertError(f"--{name} must be an integer in [{lo}, {hi}], got {v!r}")
        if len(self.ps) * len(self.lrs) * self.inits > 100_000:
            raise MdcertError(
                "the grid has more than 100,000 trajectories; use fewer --p, --lr or --inits"
            )
        if not (math.isfinite(self.init_scale) and self.init_scale >= 0):
            raise MdcertError(f"--init-scale must be finite and >= 0, got {self.init_scale!r}")

    @property
    def grid(self) -> list[tuple[float, float, int]]:
        """(p, lr, init index) per trajectory, in trajectory order."""
        return [(p, lr, i) for p in self.ps for lr in self.lrs for i in range(self.inits)]


@dataclass(frozen=True, eq=False)
class PgdPaths:
    """What a batched run recorded (float64 numpy arrays; no NaN anywhere).

    Attributes:
        config: the `PgdConfig`; steps: record steps (R,), starting at 0.
        W: iterates at the records (B, R, m); norms: ``||w(k)||_p`` (B, R).
        bregman: ``D_psi(u_ref, w(k)/||w(k)||_p)`` (B, R) when references were given, else None.
        margin: normalized margin ``min_j a_j^T w / ||w||_p`` (B, R) (0 where w = 0).
        status: `PgdStatus` per trajectory; stopped_at: the first step at which it stalled or was found
            non-finite (None when finished).
        seconds: wall time of the training loop.
    """

    config: PgdConfig
    steps: np.ndarray
    W: np.ndarray
    norms: np.ndarray
    bregman: np.ndarray | None
    margin: np.ndarray
    status: tuple[PgdStatus, ...]
    stopped_at: tuple[int | None, ...]
    seconds: float


def float_rows(problem: ClassificationProblem) -> np.ndarray:
    """The rows ``a_j`` (N, m) of the max-margin program (docs/theory.md section 7.1) as float64."""
    if not isinstance(problem, ClassificationProblem):
        raise MdcertError(f"p-GD paths need a ClassificationProblem, got {type(problem).__name__}")
    if problem.N * problem.m > MAX_ROW_ENTRIES:
        raise MdcertError(
            f"the {problem.N} x {problem.m} rows exceed {MAX_ROW_ENTRIES:,} entries; use fewer "
            f"examples or classes"
        )
    X = np.asarray(problem.X, dtype=np.float64)
    if problem.kind == "binary":
        return np.asarray(problem.y, dtype=np.float64)[:, None] * X
    K, d = problem.K, problem.d
    y = np.asarray(problem.y).astype(np.int64)
    rows = []
    for i in range(problem.n):
        for k in range(K):
            if k != y[i]:
                r = np.zeros((K, d))
                r[y[i]] = X[i]
                r[k] = -X[i]
                rows.append(r.ravel())
    return np.asarray(rows)


def record_steps(steps: int, records: int) -> np.ndarray:
    """0 and about ``records`` log-spaced distinct steps in 1..steps (the last is ``steps``)."""
    ks = np.unique(np.round(np.logspace(0, math.log10(steps), records)).astype(np.int64))
    return np.concatenate([[0], ks])


def scaled_weights(M: torch.Tensor, loss: Loss) -> tuple[torch.Tensor, torch.Tensor]:
    """``(c, m0)``: weights with ``-l'(M) = e^(-m0) c`` per row of margins M (B, N), ``max c`` about 1.

    Exponential: ``m0 = min M``, ``c = e^(m0 - M)``. Logistic: ``m0 = max(min M, 0)``,
    ``c = E / (1 + E e^(-m0))`` with ``E = e^(m0 - M)`` (so ``c = sigmoid(-M) e^(m0)``).
    """
    mmin = M.amin(dim=1, keepdim=True)
    if loss is Loss.EXPONENTIAL:
        return M.neg().add_(mmin).exp_(), mmin
    m0 = mmin.clamp(min=0.0)
    # sigmoid(-M) e^(m0) = E / (1 + E e^(-m0)) with E = e^(m0 - M); E is capped at e^700 (sigmoid(-M) = 1
    # to float64 there), which only rows with M < -700 reach
    E = M.neg().add_(m0).clamp_(max=700.0).exp_()
    return E / E.mul(torch.exp(-m0)).add_(1.0), m0


def _spow(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    return x.abs().pow(e).copysign_(x)


def _initial(config: PgdConfig, m: int) -> np.ndarray:
    rng = np.random.default_rng(config.seed)
    W0 = config.init_scale * rng.standard_normal((config.inits, m))
    return np.tile(W0, (len(config.ps) * len(config.lrs), 1))


def run_pgd_paths(
    problem: ClassificationProblem,
    config: PgdConfig,
    *,
    references: dict[float, np.ndarray] | None = None,
) -> PgdPaths:
    """Run every trajectory of ``config`` on ``problem`` (docs/theory.md section 7.5; see the module docstring).

    Args:
        references: unit directions ``u_p`` (m,) per p (the certified ``w_p/||w_p||_p`` in float64);
            with them the directional Bregman divergence is recorded.
    """
    t0 = _clock()
    A = torch.from_numpy(float_rows(problem))
    At = A.T.contiguous()
    N, m = A.shape
    grid = config.grid
    B = len(grid)
    p = torch.tensor([g[0] for g in grid], dtype=torch.float64).view(B, 1)
    lr = torch.tensor([g[1] for g in grid], dtype=torch.float64).view(B, 1)
    e_dual, e_primal, q = p - 1.0, 1.0 / (p - 1.0), p / (p - 1.0)
    ref = None
    if references is not None:
        missing = [pp for pp in config.ps if pp not in references]
        if missing:
            raise MdcertError(f"no reference direction for p = {missing[0]:g}")
        ref = torch.from_numpy(
            np.stack([np.asarray(references[g[0]], dtype=np.float64).ravel() for g in grid])
        )
        if ref.shape[1] != m:
            raise MdcertError(
                f"reference directions have {ref.shape[1]} entries; the problem has {m} variables"
            )
    W = torch.from_numpy(_initial(config, m))
    z = _spow(W, e_dual)  # the dual iterate grad psi(w): the state of the loop
    ks = record_steps(config.steps, config.records)
    R = len(ks)
    Wrec = np.zeros((B, R, m))
    alive = torch.ones(B, 1, dtype=torch.float64)
    status = [PgdStatus.FINISHED] * B
    stopped: list[int | None] = [None] * B
    eps = float(np.finfo(np.float64).eps)
    k, r = 0, 0
    threads = torch.get_num_threads()
    torch.set_num_threads(
        1
    )  # (B, N) tensors are far below torch's grain size: more threads only spin
    try:
        with torch.no_grad():
            while True:
                W = _spow(z, e_primal)
                if k == ks[r]:
                    bad = ~torch.isfinite(W).all(dim=1)
                    for b in torch.nonzero(bad).flatten().tolist():
                        W[b] = torch.from_numpy(Wrec[b, r - 1])
                        z[b] = _spow(W[b : b + 1], e_dual[b : b + 1])[0]
                        alive[b] = 0.0
                        if status[b] is not PgdStatus.NONFINITE:
                            status[b], stopped[b] = PgdStatus.NONFINITE, k
                    Wrec[:, r] = W.numpy()
                    r += 1
                    if r == R:
                        break
                c, m0 = scaled_weights(W @ At, config.loss)
                G = c @ A  # -e^(-m0) N grad L (a positive combination of rows)
                if config.normalize:
                    ax = G.abs()
                    scale = ax.amax(dim=1, keepdim=True)
                    dual = (ax / scale).pow(q).sum(dim=1, keepdim=True).pow(1.0 / q)
                    step = G * ((lr * alive) / (scale * dual))
                else:
                    step = G * ((lr * alive / N) * torch.exp(-m0))
                    if k + 1 == ks[r]:
                        moving = (step.abs() > eps * z.abs()).any(dim=1)
                        for b in torch.nonzero(~moving & (alive.flatten() > 0)).flatten().tolist():
                            if status[b] is PgdStatus.FINISHED:
                                status[b], stopped[b] = PgdStatus.STALLED, k
                if status.count(PgdStatus.NONFINITE):  # NaN * 0 is NaN: frozen rows take no step
                    step = torch.where(alive > 0, step, torch.zeros_like(step))
                z = z + step
                k += 1
    finally:
        torch.set_num_threads(threads)
    seconds = _clock() - t0
    return _finish(config, ks, Wrec, A.numpy(), ref, status, stopped, seconds)


def _clock() -> float:
    import time

    return time.perf_counter()


def _finish(config, ks, Wrec, A, ref, status, stopped, seconds) -> PgdPaths:
    p = np.array([g[0] for g in config.grid])[:, None, None]
    ax = np.abs(Wrec)
    scale = ax.max(axis=2, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    norms = (scale * ((ax / safe) ** p).sum(axis=2, keepdims=True) ** (1.0 / p))[..., 0]
    U = Wrec / np.where(norms > 0, norms, 1.0)[..., None]
    margin = np.where(norms > 0, (U @ A.T).min(axis=2), 0.0)
    breg = None
    if ref is not None:
        u = ref.numpy()[:, None, :]
        terms = (
            np.abs(u) ** p / p - np.abs(U) ** p / p - np.sign(U) * np.abs(U) ** (p - 1) * (u - U)
        )
        breg = np.where(norms > 0, np.clip(terms.sum(axis=2), 0.0, None), np.nan)
        breg = np.where(
            np.isfinite(breg), breg, (1.0 / p[..., 0]) * np.ones_like(breg)
        )  # w = 0: D = psi(u)
    return PgdPaths(
        config=config,
        steps=ks,
        W=Wrec,
        norms=norms,
        bregman=breg,
        margin=margin,
        status=tuple(status),
        stopped_at=tuple(stopped),
        seconds=seconds,
    )
