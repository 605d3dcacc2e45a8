"""Job kinds and their registry (experiments/sweep/kinds.py)."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.sweep.kinds import KINDS, JobKind, ParamType, get_kind, kind_names


def test_every_registered_kind_loads_and_names_a_command() -> None:
    parser, modules = build_parser()
    for name in kind_names():
        kind = get_kind(name)
        assert isinstance(kind, JobKind) and kind.name == name and kind.command in modules
        assert kind.ok_codes and kind.output_name


def test_argv_is_the_single_command() -> None:
    kind = get_kind("certify")
    argv = kind.argv({"problem": "/d/a.npz", "p": "1.75", "alpha": "opt", "digits": 30}, "/r/x")
    assert argv == ["certify", "/d/a.npz", "--p=1.75", "--alpha=opt", "--digits=30", "-o", "/r/x/cert.json"]
    check = get_kind("check").argv({"problem": "/a", "p": "2", "segment": True, "mu": "-1"}, "/r")
    assert check == ["check", "/a", "--p=2", "--mu=-1", "--segment", "--json", "/r/report.json"]
    assert "--segment" not in get_kind("check").argv({"problem": "/a", "p": "2", "segment": False}, "/r")
    # the command's own parser accepts every argv a kind builds
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    assert args.p == "1.75" and args.digits == 30 and args.output == "/r/x/cert.json"


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(MdcertError, match="unknown sweep kind 'poetry'; use one of certify, check, synth, paths, study"):
        get_kind("poetry")


def test_a_new_kind_is_one_module_and_one_registry_line(monkeypatch) -> None:
    """How the study kind will be added: a module defining a JobKind, one line in KINDS."""
    monkeypatch.setitem(KINDS, "synth2", "experiments.sweep.commands:SYNTH")
    with pytest.raises(TypeError, match="is not the JobKind 'synth2'"):    # the name must match
        get_kind("synth2")
    assert get_kind("synth").param("seed").type is ParamType.INT
