"""The ``study`` sweep kind (experiments/sweep/study_kind.py): argv accepted by ``mdcert study``, SPEC
validation, and (slow) a two-point sweep of tiny studies."""

from __future__ import annotations

import json

import pytest

from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.sweep.kinds import get_kind
from experiments.sweep.runner import run_sweep
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import assert_complete, write_spec

TINY = (
    'study = ["sentiment"]\noptimizers = ["1.1,2"]\nlr = [0.3]\nseed = { start = 0, stop = 2 }\nseeds = [1]\n'
    "quick = [true]\nwidth = [3]\ntrain_limit = [60]\ntest_limit = [20]\nfinetune_steps = [1]\nepochs = [1]\n"
)


def test_study_argv_is_accepted_by_the_study_command() -> None:
    argv = get_kind("study").argv(
        {
            "study": "vision",
            "optimizers": "1.1,adam",
            "lr": "0.1",
            "seed": 3,
            "seeds": 2,
            "quick": True,
        },
        "/r",
    )
    assert argv[:2] == ["study", "vision"] and argv[-2:] == ["-o", "/r/study"]
    args = build_parser()[0].parse_args(argv)
    assert (args.kind, args.optimizers, args.lr, args.seed_start, args.seeds, args.quick) == (
        "vision",
        "1.1,adam",
        0.1,
        3,
        2,
        True,
    )


def test_spec_values_the_study_would_refuse_are_refused(tmp_path) -> None:
    load_spec(write_spec(tmp_path, 'kind = "study"\n[grid]\n' + TINY))
    for bad, msg in (
        ('study = ["poetry"]\n', "study"),
        ('study = ["vision"]\noptimizers = ["sgd"]\n', "unknown optimizer"),
        ('study = ["vision"]\nseeds = [0]\n', "seeds"),
    ):
        with pytest.raises(MdcertError, match=msg):
            load_spec(write_spec(tmp_path, 'kind = "study"\n[grid]\n' + bad))


@pytest.mark.slow
def test_a_study_sweep_runs_each_seed(tmp_path) -> None:
    spec = load_spec(write_spec(tmp_path, 'kind = "study"\n[grid]\n' + TINY))
    res = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert (res.done, res.failed) == (2, 0)
    for rec in assert_complete(tmp_path / "out", 2):
        study = tmp_path / "out" / "records" / rec["key"][:2] / rec["key"] / "study"
        summary = json.loads((study / "summary.json").read_text())
        assert summary["sizes"][0]["optimizers"]["p1.1"]["lr"] == 0.3
        assert rec["verdict"] in ("no interval (fewer than 2 seeds)", "done")
