"""The datasets and initializations of ``mdcert paths`` (docs/theory.md sections 1 and 2): the paper's seeded
synthetic trials or given problem files, and random or given initializations W(0), validated before
anything runs, with the record of which file (path and sha256) and which init each trajectory used.

Problem files must share n and d; shorter sequences are padded (`AttentionProblem.padded`) to the
longest T, which changes no path (docs/theory.md section 1.3). Every error is one line.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from certify.errors import MdcertError

__all__ = [
    "PathInputs",
    "file_sha256",
    "load_problems",
    "load_inits",
    "check_init_range",
    "check_input_options",
    "resolve_inputs",
    "build",
    "SYNTHETIC_DEFAULTS",
]

#: --trials, --n, --T, --d of the synthetic study (used when no problem file is given)
SYNTHETIC_DEFAULTS = {"trials": 100, "n": 6, "T": 8, "d": 10}
#: the largest number of initializations read from a --init file
MAX_INITS = 10**6


@dataclass(frozen=True)
class PathInputs:
    """What ``mdcert paths`` runs on.

    Attributes:
        problems: the datasets the paths run on (a common T: shorter problem files padded).
        W0: initializations (D, K, d, d), float64.
        sources: the problems as their files hold them (certified, and hashed in the records and the
            certificates, so a certificate names its file's data; the padding changes no bit of it).
        problem_records: per problem file: path, sha256, data hash, n, T, d, lengths, provenance
            (None for synthetic trials).
        init_record: how W0 was made: ``{"source": "random", "std", "seed", "count", "generator"}`` or
            ``{"source": "file", "path", "sha256", "count"}``.
        trials, inits, n, T, d: the sizes that run (datasets, initializations per dataset, examples,
            tokens, dimension), given or read from the files.
    """

    problems: list
    W0: np.ndarray | None
    problem_records: list[dict] | None
    init_record: dict
    sources: list | None = None
    trials: int = 0
    inits: int = 0
    n: int = 0
    T: int = 0
    d: int = 0


def file_sha256(path: str | Path) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def load_problems(paths: list[str]) -> tuple[list, list[dict], list]:
    """Load problem files (equal n and d), pad them to the longest T; returns (padded problems, records,
    problems as loaded)."""
    from certify.problem import AttentionProblem

    loaded = [AttentionProblem.load(p) for p in paths]
    first = loaded[0]
    for path, pr in zip(paths, loaded):
        if pr.d != first.d:
            raise MdcertError(
                f"problem files must share d: {paths[0]!r} has d = {first.d}, {path!r} has d = {pr.d}"
            )
        if pr.n != first.n:
            raise MdcertError(
                f"problem files must share n (examples) to run together: {paths[0]!r} has n = "
                f"{first.n}, {path!r} has n = {pr.n}; run them in separate commands"
            )
    records = [
        {
            "path": str(path),
            "sha256": file_sha256(path),
            "data_hash": pr.data_hash(),
            "n": pr.n,
            "T": pr.T,
            "d": pr.d,
            "lengths": None if pr.lengths is None else [int(k) for k in pr.lengths],
            "provenance": pr.provenance,
        }
        for path, pr in zip(paths, loaded)
    ]
    T = max(pr.T for pr in loaded)
    return [pr if pr.T == T else pr.padded(T) for pr in loaded], records, loaded


def load_inits(path: str, d: int) -> np.ndarray:
    """A ``--init`` file: a .npy array of shape (d, d) or (K, d, d), converted to float64 exactly, finite and
    nonzero (`certify.loaders.read_init`, the validator ``mdcert check --init`` uses); returns (K, d, d)."""
    from certify.loaders import read_init

    W = read_init(path, d, stack=True)
    if W.shape[0] > MAX_INITS:
        raise MdcertError(f"--init {path!r} holds {W.shape[0]} matrices; at most {MAX_INITS}")
    return W


def check_init_range(W: np.ndarray, ps, path: str) -> None:
    """Refuse (one line) initializations whose ``||W0||_p^p`` overflows float64 for some ``p`` of the run: the
    potential, the norms and the fitted rates of a float64 path would be inf or rounding noise."""
    from certify.exact import format_exact

    with np.errstate(over="ignore"):
        for p in ps:
            sums = np.sum(np.abs(W) ** float(p), axis=(-2, -1))
            if not np.all(np.isfinite(sums)):
                k = int(np.flatnonzero(~np.isfinite(sums.ravel()))[0])
                top = float(np.max(np.abs(W.reshape(-1, *W.shape[-2:])[k])))
                raise MdcertError(
                    f"--init {path!r}: ||W0||_p^p of matrix {k} overflows float64 at p = {format_exact(p)} (largest entry "
                    f"{top:.3g}); the paths are float64: scale W0 down (its direction is what the "
                    f"paths measure)"
                )


def check_input_options(
    *,
    problems: Sequence[str],
    init: str | None,
    init_std: float | None,
    inits: int | None,
    trials: int | None,
    n: int | None,
    T: int | None,
    d: int | None,
) -> dict[str, int | None]:
    """Validate the data and init options (no file is read) and fill in the synthetic defaults;
    returns ``{"trials", "n", "T", "d", "inits"}`` as they will run, None where the problem files or
    the ``--init`` file give the value."""
    if init is not None and (init_std is not None or inits is not None):
        raise MdcertError(
            "--init gives the initializations; it cannot be combined with --init-std or --inits"
        )
    if init_std is not None and not (math.isfinite(init_std) and init_std > 0):
        raise MdcertError(f"--init-std must be finite and > 0, got {init_std}")
    sizes = {"trials": trials, "n": n, "T": T, "d": d}
    if problems:
        given = [f"--{k}" for k in SYNTHETIC_DEFAULTS if sizes[k] is not None]
        if given:
            raise MdcertError(
                f"{', '.join(given)} describe synthetic trials; with problem files n, T, d and the "
                f"number of datasets come from the files"
            )
    else:
        sizes = {k: SYNTHETIC_DEFAULTS[k] if v is None else v for k, v in sizes.items()}
    sizes["inits"] = None if init is not None else (1 if inits is None else inits)
    return sizes


def resolve_inputs(
    *,
    problems: Sequence[str],
    init: str | None,
    init_std: float | None,
    seed: int,
    trials: int | None,
    n: int | None,
    T: int | None,
    d: int | None,
    inits: int | None,
) -> PathInputs:
    """Load every input of options validated by `check_input_options` (sizes as it returns them);
    the returned `PathInputs` holds the sizes that will run (call `build` for the synthetic datasets
    and the random W0 once the sizes are validated)."""
    files = list(problems)
    if files:
        loaded, records, sources = load_problems(files)
        trials, n, T, d = len(loaded), loaded[0].n, loaded[0].T, loaded[0].d
    else:
        loaded, records, sources = [], None, None  # built after the sizes are bounded
    if init is not None:
        W = load_inits(init, d)
        inits = W.shape[0]
        record = {
            "source": "file",
            "path": str(init),
            "sha256": file_sha256(init),
            "count": int(W.shape[0]),
        }
    else:
        W = None
        record = {
            "source": "random",
            "std": 1.0 if init_std is None else float(init_std),
            "seed": seed,
            "count": int(inits),
            "generator": "torch.Generator().manual_seed(seed), N(0, std^2) float64",
        }
    return PathInputs(
        loaded, W, records, record, sources, trials=trials, inits=inits, n=n, T=T, d=d
    )


def build(inputs: PathInputs, *, seed: int) -> PathInputs:
    """The datasets and W0 (D, K, d, d) of validated inputs (synthetic trials and random inits here)."""
    import torch

    from certify import synthetic_problem

    problems = inputs.problems or [
        synthetic_problem(n=inputs.n, T=inputs.T, d=inputs.d, seed=1_000_000 * seed + t)
        for t in range(inputs.trials)
    ]
    if inputs.W0 is not None:
        W0 = np.broadcast_to(inputs.W0, (len(problems),) + inputs.W0.shape)
    else:
        gen = torch.Generator(device="cpu").manual_seed(seed)
        W0 = torch.randn(
            (inputs.trials, inputs.inits, inputs.d, inputs.d), generator=gen, dtype=torch.float64
        ).numpy()
        if inputs.init_record["std"] != 1.0:
            W0 = W0 * inputs.init_record["std"]
    return replace(inputs, problems=problems, W0=W0, sources=inputs.sources or problems)
