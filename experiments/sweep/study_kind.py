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

The verdict is the record's p = 1.1 versus GD verdict when both are in the point, else ``done``.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.sweep.commands import check_decimal
from experiments.sweep.kinds import JobKind, Param, ParamType

__all__ = ["STUDY"]


def _int_range(name: str, lo: int, hi: int):
    from certify.errors import MdcertError

    def check(value: object) -> None:
        if not lo <= int(value) <= hi:  # type: ignore[arg-type]
            raise MdcertError(f"invalid grid.{name} {value!r}; give an integer between {lo} and {hi}")
    return check


def _optimizers(value: object) -> None:
    from experiments.studies.train import parse_optimizer

    for s in str(value).split(","):
        parse_optimizer(s)


def study_verdict(record: Path, code: int) -> str:
    """``beat`` / ``worse`` / ``no difference shown`` for p = 1.1 against GD when both ran, else ``done``."""
    try:
        with open(record / "study" / "summary.json") as fh:
            size = json.load(fh)["sizes"][0]["optimizers"]
        return str(size["p1.1"]["verdict_vs_gd"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "done"


def _studies() -> tuple[str, ...]:
    from experiments.studies.kinds import kind_names

    return tuple(kind_names())


STUDY = JobKind(
    name="study", command="study",
    params=(Param("study", ParamType.TEXT, None, required=True, choices=_studies()),
            Param("optimizers", ParamType.TEXT, "--optimizers", check=_optimizers),
            Param("lr", ParamType.DECIMAL, "--lr", check=check_decimal("lr")),
            Param("seed", ParamType.INT, "--seed-start", check=_int_range("seed", 0, 2 ** 31)),
            Param("seeds", ParamType.INT, "--seeds", check=_int_range("seeds", 1, 1000)),
            Param("size", ParamType.TEXT, "--size"),
            Param("epochs", ParamType.INT, "--epochs", check=_int_range("epochs", 1, 10 ** 4)),
            Param("width", ParamType.INT, "--width", check=_int_range("width", 1, 4096)),
            Param("train_limit", ParamType.INT, "--train-limit", check=_int_range("train_limit", 10, 10 ** 7)),
            Param("test_limit", ParamType.INT, "--test-limit", check=_int_range("test_limit", 10, 10 ** 7)),
            Param("finetune_steps", ParamType.INT, "--finetune-steps", check=_int_range("finetune_steps", 0, 10 ** 6)),
            Param("quick", ParamType.BOOL, "--quick"),
            Param("device", ParamType.TEXT, "--device", choices=("auto", "cpu", "cuda"))),
    output_flag="-o", output_name="study", ok_codes=frozenset({0}), verdict=study_verdict,
    verdicts=("beat", "no difference shown", "worse", "no interval (fewer than 2 seeds)", "done"), extra_argv=("--progress", "off"),
    preload=("numpy", "torch", "experiments.studies.protocol"))
