"""The datasets and initializations of ``mdcert paths`` (docs/theory.md sections 1 and 2): the paper's seeded
synthetic trials or given problem files, and random or given initializations W(0), validated before
anything runs, with the record of which file (path and sha256) and which init each trajectory used.

Problem files must share n and d; shorter sequences are padded (`AttentionProblem.padded`) to the
longest T, which changes no path (docs/theory.md section 1.3). Every error is one line.
"""

from __future__ import annotations

import argparse
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from certify.errors import MdcertError

__all__ = ["PathInputs", "file_sha256", "load_problems", "load_inits", "check_init_range", "resolve_inputs", "build", "SYNTHETIC_DEFAULTS"]

#: --trials, --n, --T, --d of the synthetic study (used when no problem file is given)
SYNTHETIC_DEFAULTS = {"trials": 100, "n": 6, "T": 8, "d": 10}
#: the largest number of initializations read from a --init file
MAX_INITS = 10 ** 6


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
    """

    problems: list
    W0: np.ndarray
    problem_records: list[dict] | None
    init_record: dict
    sources: list | None = None


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
            raise MdcertError(f"problem files must share d: {paths[0]!r} has d = {first.d}, {path!r} has d = {pr.d}")
        if pr.n != first.n:
            raise MdcertError(f"problem files must share n (examples) to run together: {paths[0]!r} has n = "
                              f"{first.n}, {path!r} has n = {pr.n}; run them in separate commands")
    records = [{"path": str(path), "sha256": file_sha256(path), "data_hash": pr.data_hash(), "n": pr.n, "T": pr.T,
                "d": pr.d, "lengths": None if pr.lengths is None else [int(k) for k in pr.lengths],
                "provenance": pr.provenance} for path, pr in zip(paths, loaded)]
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
                raise MdcertError(f"--init {path!r}: ||W0||_p^p of matrix {k} overflows float64 at p = {format_exact(p)} (largest entry "
                                  f"{top:.3g}); the paths are float64: scale W0 down (its direction is what the "
                                  f"paths measure)")


def resolve_inputs(args: argparse.Namespace) -> PathInputs:
    """Validate the data and init options, fill in the synthetic defaults, load every input; sets
    ``args.trials``, ``args.n``, ``args.T``, ``args.d`` and ``args.inits`` to what will run (call `build`
    for the synthetic datasets and the random W0 once the sizes are validated)."""
    files = list(getattr(args, "problems", None) or [])
    std = getattr(args, "init_std", None)
    if args.init is not None and (std is not None or args.inits is not None):
        raise MdcertError("--init gives the initializations; it cannot be combined with --init-std or --inits")
    if std is not None and not (math.isfinite(std) and std > 0):
        raise MdcertError(f"--init-std must be finite and > 0, got {std}")
    if files:
        given = [f"--{k}" for k in SYNTHETIC_DEFAULTS if getattr(args, k) is not None]
        if given:
            raise MdcertError(f"{', '.join(given)} describe synthetic trials; with problem files n, T, d and the "
                              f"number of datasets come from the files")
    else:
        for k, v in SYNTHETIC_DEFAULTS.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
    if args.inits is None:
        args.inits = 1
    if files:
        problems, records, sources = load_problems(files)
        args.trials, args.n, args.T, args.d = len(problems), problems[0].n, problems[0].T, problems[0].d
    else:
        problems, records, sources = None, None, None   # built after parse_config has bounded the sizes
    if args.init is not None:
        W = load_inits(args.init, args.d)
        args.inits = W.shape[0]
        init = {"source": "file", "path": str(args.init), "sha256": file_sha256(args.init), "count": int(W.shape[0])}
    else:
        W = None
        init = {"source": "random", "std": 1.0 if std is None else float(std), "seed": args.seed,
                "count": int(args.inits), "generator": "torch.Generator().manual_seed(seed), N(0, std^2) float64"}
    return PathInputs(problems if problems is not None else [], W, records, init, sources)


def build(args: argparse.Namespace, inputs: PathInputs) -> PathInputs:
    """The datasets and W0 (D, K, d, d) of validated arguments (synthetic trials and random inits here)."""
    import torch

    from certify import synthetic_problem

    problems = inputs.problems or [synthetic_problem(n=args.n, T=args.T, d=args.d, seed=1_000_000 * args.seed + t)
                                   for t in range(args.trials)]
    if inputs.W0 is not None:
        W0 = np.broadcast_to(inputs.W0, (len(problems),) + inputs.W0.shape)
    else:
        gen = torch.Generator(device="cpu").manual_seed(args.seed)
        W0 = torch.randn((args.trials, args.inits, args.d, args.d), generator=gen, dtype=torch.float64).numpy()
        if inputs.init_record["std"] != 1.0:
            W0 = W0 * inputs.init_record["std"]
    return PathInputs(problems, W0, inputs.problem_records, inputs.init_record, inputs.sources or problems)
