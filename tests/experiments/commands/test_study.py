"""mdcert study's application layer (experiments/commands/study.py): the frozen Config, parse, Result."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from certify.errors import MdcertError
from experiments.commands import COMMAND_MODULES, parse
from experiments.commands.study import Config, Result


def _options(**kw) -> dict:
    base = {
        "command": "study",
        "kind": "sentiment",
        "out": "o",
        "seeds": None,
        "device": "cpu",
        "quick": False,
        "lr": None,
        "seed_start": 0,
        "threads": 1,
        "workers": None,
        "progress": "off",
        "size": "3",
        "optimizers": "2,adam",
        "width": None,
    }
    return {**base, **kw}


def test_registered() -> None:
    assert COMMAND_MODULES["study"] == "experiments.commands.study"


def test_config_is_frozen_picklable_and_reads_the_kinds_options() -> None:
    c = Config.from_options(_options())
    assert c.seeds == 5 and Config.from_options(_options(quick=True)).seeds == 2
    assert c.size == "3" and c.optimizers == "2,adam" and c.width is None
    assert getattr(c, "embed", "static") == "static"  # absent: the default, as on a namespace
    with pytest.raises(AttributeError):
        c.embed
    with pytest.raises(AttributeError):
        c.seeds = 3
    again = pickle.loads(pickle.dumps(c))  # it travels to worker processes
    assert again == c and hash(again) == hash(c) and again.size == "3"
    assert c.recorded() == {
        "device": "cpu",
        "kind": "sentiment",
        "lr": None,
        "optimizers": "2,adam",
        "quick": False,
        "seed_start": 0,
        "seeds": 5,
        "size": "3",
        "threads": 1,
        "width": None,
        "workers": None,
    }


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"kind": None}, r"give a study: mdcert study \{sentiment,vision,realdata,pgd\} -o DIR"),
        ({"seeds": 0}, r"--seeds 0: give a number between 1 and 1000"),
        ({"lr": -1.0}, r"--lr -1.0: give a positive finite step size"),
        ({"lr": float("inf")}, r"--lr inf: give a positive finite step size"),
        ({"seed_start": -1}, r"--seed-start -1: give an integer between 0 and 2147483648"),
        ({"threads": 0}, r"--threads 0: give a number between 1 and 1024"),
        ({"workers": 0}, r"--workers 0: give a number of processes between 1 and 256"),
    ],
)
def test_bad_options_are_one_line(kw, message) -> None:
    with pytest.raises(MdcertError, match=message):
        Config.from_options(_options(**kw))


def test_parse_builds_the_config_from_argv() -> None:
    c = parse(
        "study", ["sentiment", "--quick", "--optimizers", "2,adam", "--lr", "0.01", "-o", "d"]
    )
    assert c.kind == "sentiment" and c.quick and c.lr == 0.01 and c.seeds == 2 and c.out == "d"
    assert c.optimizers == "2,adam"
    with pytest.raises(ValueError):
        parse("study", ["sentiment"])  # -o is required: one line, no exit


def test_result_lines_and_notice(tmp_path: Path) -> None:
    r = Result("sentiment", "run", tmp_path, 3, 1, 2, 10.0, 9.0, 12.0, 13.5, ("headline",))
    assert r.exit_code == 0 and r.write(tmp_path) is None and not list(tmp_path.iterdir())
    assert r.lines(80) == [
        f"study sentiment: 3 run(s) trained now, 1 reused; 12.0 s wall (as in report.md) + 1.5 s writing the report "
        f"and figures; the runs' own times summed over 2 worker(s): 10.0 s wall, 9.0 s CPU; report {tmp_path / 'report.md'}",
        "headline",
    ]
    cut = Result("realdata", "certificate", tmp_path, 0, 0, 1, 0.0, 0.0, 0.0, 0.0, interrupted=True)
    assert cut.exit_code == 130 and cut.lines(80) == []
    assert cut.notice() == (
        f"mdcert study: interrupted; every certificate made so far is stored in {tmp_path / 'runs'} "
        f"(rerun the same command to resume)"
    )
