"""One trajectory of a ``mdcert paths`` run, as ``mdcert check --run DIR --trajectory K`` reads it: the
problem it trained on, W(0), p, the step size, the steps it took, the step rule (docs/theory.md
section 2.3), and where it ended (final tokens and W), so that a re-run can be compared with it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from certify.errors import MdcertError

__all__ = ["RunTrajectory", "load_trajectory", "compare_endings"]


@dataclass(frozen=True)
class RunTrajectory:
    """Trajectory ``index`` of the run in ``run_dir``.

    Attributes:
        problem: the `AttentionProblem` of its dataset (as stored in arrays.npz, padding with lengths).
        W0: (d, d) float64 initialization; p: exact exponent; lr: the step size's text (float64 repr).
        steps: steps it took (its stop step); normalize: the run's step rule.
        alpha_final: (n,) tokens of its final attention; W_final: (d, d) its last iterate.
        dtype: the run's float type; status: how it ended.
    """

    run_dir: str
    index: int
    problem: object
    W0: np.ndarray
    p: Fraction
    lr: str
    steps: int
    normalize: bool
    alpha_final: np.ndarray
    W_final: np.ndarray
    dtype: str
    status: str


def load_trajectory(run_dir: str | Path, index: int) -> RunTrajectory:
    """Read trajectory ``index`` of a paths run; MdcertError (one line) when it cannot be checked."""
    from certify.problem import AttentionProblem
    from experiments.paths.plots import load_run

    summary, arrays = load_run(run_dir)
    if summary.get("kind") != "paths":
        raise MdcertError(
            f"--run {str(run_dir)!r} is a {summary.get('kind')!r} run; give a 'mdcert paths' run directory"
        )
    need = (
        "W0",
        "p_exact",
        "lr",
        "stop_step",
        "trial",
        "X",
        "y",
        "z",
        "v",
        "alpha_final",
        "W_final",
        "status",
    )
    missing = [k for k in need if k not in arrays]
    if missing:
        raise MdcertError(
            f"--run {str(run_dir)!r} has no arrays.npz with {', '.join(missing)}; rerun 'mdcert paths'"
        )
    B = int(arrays["W0"].shape[0])
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < B:
        raise MdcertError(
            f"--trajectory {index} is not in the run; give an index from 0 to {B - 1}"
        )
    cfg = summary.get("config") or {}
    if cfg.get("train_decoder"):
        raise MdcertError(
            "the run trained the decoder jointly; the hypotheses are checked with a fixed decoder "
            "(rerun 'mdcert paths' without --train-decoder)"
        )
    t = int(arrays["trial"][index])
    lengths = arrays["lengths"][t] if "lengths" in arrays else None
    problem = AttentionProblem(
        arrays["X"][t], arrays["y"][t], arrays["z"][t], arrays["v"][t], lengths=lengths
    )
    num, den = str(arrays["p_exact"][index]).split("/")
    return RunTrajectory(
        str(run_dir),
        index,
        problem,
        np.array(arrays["W0"][index], dtype=np.float64),
        Fraction(int(num), int(den)),
        repr(float(arrays["lr"][index])),
        int(arrays["stop_step"][index]),
        bool(cfg.get("normalize")),
        np.asarray(arrays["alpha_final"][index]),
        np.asarray(arrays["W_final"][index]),
        str(summary.get("dtype", "float64")),
        str(arrays["status"][index]),
    )


def compare_endings(run: RunTrajectory, W_last: np.ndarray, alpha_last) -> dict:
    """How the re-run path ends against the run's record: same final tokens, and the relative
    Frobenius distance of the last iterates (float64 runs agree to rounding; float32 runs do not)."""
    ref = np.asarray(run.W_final, dtype=np.float64)
    scale = float(np.linalg.norm(ref))
    rel = (
        float(np.linalg.norm(np.asarray(W_last, dtype=np.float64) - ref) / scale)
        if scale > 0
        else None
    )
    return {
        "same_final_tokens": bool(np.array_equal(np.asarray(alpha_last), run.alpha_final)),
        "relative_distance_W_final": rel,
        "run_dtype": run.dtype,
        "run_status": run.status,
    }
