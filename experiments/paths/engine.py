"""Batched mirror-descent training paths: B trajectories in one tensor program (docs/theory.md sections 2, 5).

Trajectories are the grid datasets x p values x initializations x step sizes. Each has its own p, step
size and step count; trajectories sharing ``(p, lr)`` form a group that runs with scalar exponents
(fast paths for p = 2 and p = 3) and is compacted when some of its members finish or stop. On CUDA
(launch-bound) the p values share one group with per-row exponent tensors (``group_by_p``).

The pieces: the analytic kernels (`experiments.paths.kernels`), one group's state and mirror step
(`experiments.paths.group`), the loop and recorder (`experiments.paths.loop`) and the result
(`experiments.paths.result`); this module validates the input, forms the groups and measures
directional Bregman divergences.

The gradient is analytic and saturation-safe (`experiments.paths.kernels`): normalized steps keep an
exact direction however saturated the attention is. A trajectory whose gradient or iterate becomes
non-finite (e.g. the logits overflow float64) stops with status ``nonfinite``; one whose normalized
step is undefined (gradient exactly 0) stops with ``zero_gradient``; the stop step and the last
iterate are recorded. Neither is a crash.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from certify.errors import MdcertError
from certify.exact import parse_p
from experiments.paths.group import PathGroup
from experiments.paths.kernels import loss_and_grad  # noqa: F401  (re-exported)
from experiments.paths.loop import Recorder, run_loop
from experiments.paths.result import PathResult, TrajectoryStatus  # noqa: F401  (re-exported)

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
            raise MdcertError(
                f"device {name!r} requested but CUDA is not available; use --device cpu or auto"
            )
        try:
            dev = torch.device(name)
        except RuntimeError:
            raise MdcertError(f"invalid device {name!r}; use auto, cpu, cuda or cuda:K") from None
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise MdcertError(
                f"device {name!r} does not exist ({torch.cuda.device_count()} CUDA devices)"
            )
        return dev
    raise MdcertError(f"unknown device {name!r}; use auto, cpu or cuda")


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    table = {
        "float64": torch.float64,
        "double": torch.float64,
        "float32": torch.float32,
        "float": torch.float32,
    }
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise MdcertError(f"unsupported dtype {dtype}; use float64 or float32")
        return dtype
    try:
        return table[str(dtype).lower()]
    except KeyError:
        raise MdcertError(f"unsupported dtype {dtype!r}; use float64 or float32") from None


#: spacings of the record schedule; "auto" is log-spaced for runs longer than this many times the records
SPACINGS = ("log", "linear", "auto")
AUTO_LOG_ABOVE = 10


def record_schedule(steps: int, records: int, *, spacing: str = "log") -> np.ndarray:
    """Recording steps in ``{0, 1, ..., steps}`` (at most ``records`` values, always 0 and steps).

    ``spacing``: "log" (log-spaced, what rate fits over decades need; short runs get fewer points),
    "linear" (evenly spaced) or "auto" (log-spaced when ``steps > AUTO_LOG_ABOVE * records``, else linear).
    The schedule is fixed before the run: memory holds ``records`` iterates whatever the horizon.
    """
    if records < 2:
        raise MdcertError(f"records must be >= 2, got {records}")
    if spacing not in SPACINGS:
        raise MdcertError(f"unknown record spacing {spacing!r}; use one of {', '.join(SPACINGS)}")
    if steps <= 0:
        return np.zeros(1, dtype=np.int64)
    if spacing == "auto":
        spacing = "log" if steps > AUTO_LOG_ABOVE * records else "linear"
    if spacing == "linear":
        return np.unique(
            np.round(np.linspace(0, steps, num=min(records, steps + 1))).astype(np.int64)
        )
    grid = np.unique(np.round(np.geomspace(1, steps, num=records - 1)).astype(np.int64))
    # unique() can leave fewer than records-1 points for short runs; that is fine
    return np.concatenate([[0], grid]).astype(np.int64)


@dataclass(frozen=True)
class StackedData:
    """Per-dataset float64 numpy arrays: X (D,n,T,d), y (D,n), z (D,n,d), v (D,d); mask (D,n,T) of the
    valid tokens, None when every dataset is full length (docs/theory.md section 1.3)."""

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None = None


def stack_problems(problems: Sequence) -> StackedData:
    """Stack `AttentionProblem`s of equal shape (n, T, d) into arrays with a leading dataset axis
    (pad shorter ones with `AttentionProblem.padded` first)."""
    if len(problems) == 0:
        raise MdcertError("no datasets given; pass at least one problem")
    shapes = {(pr.n, pr.T, pr.d) for pr in problems}
    if len(shapes) != 1:
        raise MdcertError(
            f"all datasets must have the same (n, T, d); got {sorted(shapes)} "
            f"(pad to a common T with AttentionProblem.padded)"
        )
    padded = any(getattr(pr, "lengths", None) is not None for pr in problems)
    mask = np.stack([pr.token_mask for pr in problems]) if padded else None
    return StackedData(
        np.stack([pr.X for pr in problems]),
        np.stack([pr.y for pr in problems]),
        np.stack([pr.z for pr in problems]),
        np.stack([pr.v for pr in problems]),
        mask,
    )


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
    from experiments.paths.config import check_float_p

    ps = tuple(check_float_p(parse_p(x), str(x), "p") for x in p)
    lr_a = np.asarray(lr, dtype=np.float64)
    st_a = np.asarray(steps, dtype=np.int64)
    di = np.asarray(data_index, dtype=np.int64)
    if np.any(~np.isfinite(lr_a) | (lr_a <= 0)):
        raise MdcertError(
            f"step sizes must be finite and > 0; got {lr_a[~np.isfinite(lr_a) | (lr_a <= 0)][0]}"
        )
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
    vlr = (
        lr_a.copy()
        if decoder_lr is None
        else np.broadcast_to(np.asarray(decoder_lr, dtype=np.float64), (B,)).copy()
    )
    if np.any(~np.isfinite(vlr) | (vlr <= 0)):
        raise MdcertError("decoder step sizes must be finite and > 0")
    return data, ps, lr_a, st_a, di, W0, v0, vlr


def run_paths(
    problems: Sequence,
    *,
    data_index: Sequence[int],
    p: Sequence,
    lr: Sequence[float],
    steps: Sequence[int],
    W0: np.ndarray,
    normalize: bool = False,
    train_decoder: bool = False,
    v0: np.ndarray | None = None,
    decoder_lr: float | Sequence[float] | None = None,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = "float64",
    records: int = 64,
    spacing: str = "log",
    progress: bool | None = None,
    check_every: int = 64,
    threads: int | None = 1,
    on_finish: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    group_by_p: bool | None = None,
) -> PathResult:
    """Run B mirror-descent trajectories at once (docs/theory.md section 2) and record them at log-spaced steps.

    Args:
        problems: datasets (equal n, T, d; padding of variable-length problems is masked);
            trajectory b uses ``problems[data_index[b]]``.
        data_index, p, lr, steps: per trajectory, length B (p parsed exactly, e.g. "1.75").
        W0: (B, d, d) initial attention matrices.
        normalize: divide each gradient by its dual norm ``||G||_q`` (docs/theory.md section 2 option).
        train_decoder: also train ``v`` (same mirror map, its own step ``decoder_lr``; default lr).
        v0: (B, d) initial decoders (default: each dataset's v).
        device: "auto" | "cpu" | "cuda"; dtype: "float64" (default) | "float32".
        records: recording points per trajectory (including 0 and the last step).
        spacing: "log" (default), "linear" or "auto" (`record_schedule`).
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
    data, ps, lr_a, st_a, di, W0, v0, vlr = _validate(
        problems, data_index, p, lr, steps, W0, v0, decoder_lr
    )
    B = len(ps)
    _, n, T, d = data.X.shape
    check_every = max(1, int(check_every))
    if progress is None:
        progress = sys.stderr.isatty()

    scheds = {int(K): record_schedule(int(K), records, spacing=spacing) for K in np.unique(st_a)}
    R = max(len(s) for s in scheds.values()) + 1  # one spare slot for an early stop
    rec = Recorder(B, R, n, T, d, train_decoder, on_finish)
    rec_at: dict[int, list[tuple[int, int]]] = {}
    for b in range(B):
        for slot, k in enumerate(scheds[int(st_a[b])]):
            rec_at.setdefault(int(k), []).append((b, slot))

    if group_by_p is None:
        group_by_p = dev.type == "cpu"
    keys: dict[tuple, list[int]] = {}
    for b in range(B):
        keys.setdefault(
            ((ps[b],) if group_by_p else ()) + (float(lr_a[b]), float(vlr[b])), []
        ).append(b)
    groups = []
    for key, members in keys.items():
        mem = np.asarray(members)
        lk, vk = key[-2], key[-1]
        gdata = {
            "X": data.X[di[mem]],
            "z": data.z[di[mem]],
            "y": data.y[di[mem]],
            "mask": None if data.mask is None else data.mask[di[mem]],
        }
        groups.append(
            PathGroup(
                mem,
                [ps[b] for b in mem],
                lk,
                gdata,
                W0[mem],
                v0[mem],
                normalize,
                train_decoder,
                vk,
                dev,
                dt,
            )
        )

    saved_threads = torch.get_num_threads()
    if threads is not None and dev.type == "cpu":
        torch.set_num_threads(int(threads))
    try:
        return run_loop(
            groups,
            rec,
            rec_at,
            scheds,
            st_a,
            dev,
            dt,
            check_every,
            progress,
            ps,
            lr_a,
            di,
            normalize,
        )
    finally:
        torch.set_num_threads(saved_threads)


# ---------------------------------------------------------------------------------------------- analysis
def directional_bregman(
    W: np.ndarray, record_steps: np.ndarray, reference: np.ndarray, p: Sequence
) -> np.ndarray:
    """``D_psi(Wbar_ref, Wbar(k))`` for every recorded iterate (docs/theory.md section 2; reference first).

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
    valid = (
        (record_steps >= 0)
        & np.all(np.isfinite(W), axis=(-2, -1))
        & np.all(np.isfinite(reference), axis=(-2, -1))[:, None]
    )
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
