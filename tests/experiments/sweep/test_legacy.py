"""TEMPORARY (experiments/sweep/legacy.py, deleted with it): a kind whose command is not in
`experiments.commands.COMMAND_MODULES` is read, validated and run through the CLI, and only such a kind."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from experiments.commands import COMMAND_MODULES
from experiments.sweep import legacy
from experiments.sweep.kinds import get_kind, registered


def test_only_unregistered_commands_take_the_legacy_path(monkeypatch) -> None:
    for name in ("certify", "check", "synth", "paths", "study"):
        if registered(name):
            continue
        kind = get_kind(name)
        assert kind.worker_preload()[-1] == "experiments.sweep.legacy:warm_cli"
    monkeypatch.setitem(COMMAND_MODULES, "fake", "tests.experiments.sweep.fake_command")
    assert registered("fake") and not registered("no-such-command")


def test_legacy_validation_is_the_clis_parser_and_paths_config() -> None:
    legacy.validate("synth", ["synth", "--n=2", "-o", "/r/problem.npz"])
    with pytest.raises(MdcertError, match="argument --n: invalid int value: 'x'"):
        legacy.validate("synth", ["synth", "--n=x", "-o", "/r/problem.npz"])
    with pytest.raises(MdcertError, match="--steps must be integers"):
        legacy.validate("paths", ["paths", "--steps=abc", "-o", "/r/run"])
    assert set(legacy.value_checks("certify")) == {"p", "alpha", "digits", "time_limit"}
    assert legacy.value_checks("fake") == {}
