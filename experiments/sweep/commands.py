"""The built-in sweep kinds ``certify``, ``check``, ``synth`` and ``paths``: the sweep's own facts.

Each job runs its command as a user would (docs/theory.md section 4.5 for certify, section 5 for
check, section 6 for paths). A kind names only what the sweep needs beyond the command's options:
which options the grid may sweep, which are input files or exact decimals, where the output goes
inside the record, which exit codes are answers and how to read the verdict. The options themselves
and their validation are the command's (`experiments.sweep.kinds.grid_params`, `JobKind.validate`).
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.sweep.kinds import JobKind

__all__ = ["CERTIFY", "CHECK", "SYNTH", "PATHS", "alpha_text"]


def alpha_text(value: object) -> object:
    """A list of token indices becomes the command's ``"0,3,1"``."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(a, int) and not isinstance(a, bool) for a in value)
    ):
        return ",".join(str(a) for a in value)
    return value


# -------------------------------------------------------------------------------------- verdicts
def _json(record: Path, name: str) -> dict:
    with open(record / name) as fh:
        return json.load(fh)


def certify_verdict(record: Path, code: int) -> str:
    """The certificate's status: optimal, infeasible or no_verified_result."""
    return str(_json(record, "cert.json")["status"])


def check_verdict(record: Path, code: int) -> str:
    """The theorem's Kleene AND of its hypotheses: holds, fails or undecided."""
    return str(_json(record, "report.json")["verdict"])


def written(record: Path, code: int) -> str:
    """Kinds without a verdict: the command finished and wrote its output."""
    return "done"


# ----------------------------------------------------------------------------------------- kinds
#: what a certify job imports on its first run (loaded by the worker's start-up, not charged to the job)
_CERTIFY_STACK = (
    "numpy",
    "scipy.linalg",
    "scipy.optimize",
    "flint",
    "certify.problem",
    "certify.svm",
    "certify.certificate",
    "certify.export",
    "certify.check.verified",
    "certify.workingset",
    "certify.warmstart",
    "certify.classify",
    "certify.info",
    "certify.loaders",
    "threadpoolctl",
    "experiments.runtime.progress",
    "certify.io.atomic",
    "experiments.runtime.outputs",
)

CERTIFY = JobKind(
    name="certify",
    command="certify",
    grid=("problem", "p", "svm", "alpha", "digits", "time_limit"),
    files=("problem",),
    decimals=("p",),
    convert={"alpha": alpha_text},
    output_flag="-o",
    output_name="cert.json",
    ok_codes=frozenset({0, 2, 3}),
    verdict=certify_verdict,
    verdicts=("optimal", "infeasible", "no_verified_result"),
    preload=_CERTIFY_STACK,
)

CHECK = JobKind(
    name="check",
    command="check",
    grid=(
        "problem",
        "p",
        "theorem",
        "alpha",
        "init",
        "lr",
        "steps",
        "mu",
        "R",
        "loss",
        "segment",
        "digits",
    ),
    files=("problem", "init"),
    decimals=("p", "lr", "mu", "R"),
    required=("problem", "p"),
    convert={"alpha": alpha_text},
    output_flag="--json",
    output_name="report.json",
    ok_codes=frozenset({0}),
    verdict=check_verdict,
    verdicts=("holds", "fails", "undecided"),
    preload=_CERTIFY_STACK
    + (
        "theorems.catalogue",
        "theorems.loss_parse",
        "certify.check",
        "experiments.runtime.terminal",
        "experiments.paths.trajectory",
        "sympy",
        "sympy.combinatorics",
        "sympy.tensor.tensor",
        "sympy.sets.setexpr",
        "sympy.assumptions.wrapper",
    ),
)  # sympy loads these on its first use

SYNTH = JobKind(
    name="synth",
    command="synth",
    grid=("n", "T", "d", "seed"),
    output_flag="-o",
    output_name="problem.npz",
    ok_codes=frozenset({0}),
    verdict=written,
    preload=("numpy", "certify.problem"),
)

PATHS = JobKind(
    name="paths",
    command="paths",
    grid=(
        "problem",
        "p",
        "steps",
        "lr",
        "trials",
        "inits",
        "seed",
        "normalize",
        "cross",
        "train_decoder",
        "decoder_lr",
        "records",
        "tail",
        "digits",
        "workers",
        "no_certify",
        "device",
        "dtype",
        "n",
        "T",
        "d",
    ),
    dests={"problem": "problems"},  # one problem file a job (the command takes several)
    files=("problem",),
    output_flag="-o",
    output_name="run",
    ok_codes=frozenset({0}),
    verdict=written,
    preload=("numpy", "torch") + _CERTIFY_STACK,
)
