"""The ``study`` sweep kind: one ``mdcert study`` per grid point (docs/theory.md section 6.5).

A grid over ``optimizers`` x ``lr`` x ``seed`` (x ``size`` ...) runs each point as
``mdcert study STUDY --optimizers O --lr LR --seed-start S --seeds K ... -o RECORD/study``: no
tuning (the step size is the grid's), seeds ``S .. S+K-1``, the full analyses and report of that one
point in the record. A SPEC:

    kind = "study"
    [grid]
    study = ["sentiment"]
    optimizers = ["1.1", "2", "3", "adam"]
    lr = [0.1, 0.3]
    seed = { start = 0, stop = 5 }
    quick = [true]

``task`` (``digits``, ``text``, ``both``) and ``snippets`` select the tasks of ``study = ["pgd"]``.
The verdict is the record's p = 1.1 versus GD verdict when both are in the point, else ``done``.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.sweep.kinds import JobKind

__all__ = ["STUDY"]


def study_verdict(record: Path, code: int) -> str:
    """``beat`` / ``worse`` / ``no difference shown`` for p = 1.1 against GD when both ran (the first
    entry of ``sizes``: pgd's first task), else ``done``."""
    try:
        with open(record / "study" / "summary.json") as fh:
            size = json.load(fh)["sizes"][0]["optimizers"]
        return str(size["p1.1"]["verdict_vs_gd"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "done"


STUDY = JobKind(
    name="study",
    command="study",
    grid=(
        "study",
        "task",
        "snippets",
        "optimizers",
        "lr",
        "seed",
        "seeds",
        "size",
        "epochs",
        "width",
        "train_limit",
        "test_limit",
        "finetune_steps",
        "quick",
        "device",
    ),
    dests={"study": "kind", "seed": "seed_start"},
    decimals=("lr",),
    required=("study",),
    output_flag="-o",
    output_name="study",
    ok_codes=frozenset({0}),
    verdict=study_verdict,
    verdicts=("beat", "no difference shown", "worse", "no interval (fewer than 2 seeds)", "done"),
    extra_argv=("--progress", "off"),
    preload=("numpy", "torch", "experiments.studies.protocol"),
)
