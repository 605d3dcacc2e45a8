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
    assert argv == [
        "certify",
        "/d/a.npz",
        "--p=1.75",
        "--alpha=opt",
        "--digits=30",
        "-o",
        "/r/x/cert.json",
    ]
    check = get_kind("check").argv({"problem": "/a", "p": "2", "segment": True, "mu": "-1"}, "/r")
    assert check == ["check", "/a", "--p=2", "--mu=-1", "--segment", "--json", "/r/report.json"]
    assert "--segment" not in get_kind("check").argv(
        {"problem": "/a", "p": "2", "segment": False}, "/r"
    )
    # the command's own parser accepts every argv a kind builds
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    assert args.p == "1.75" and args.digits == 30 and args.output == "/r/x/cert.json"


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(
        MdcertError,
        match="unknown sweep kind 'poetry'; use one of certify, check, synth, paths, study",
    ):
        get_kind("poetry")


def test_a_new_kind_is_one_module_and_one_registry_line(monkeypatch) -> None:
    """How the study kind will be added: a module defining a JobKind, one line in KINDS."""
    monkeypatch.setitem(KINDS, "synth2", "experiments.sweep.commands:SYNTH")
    with pytest.raises(TypeError, match="is not the JobKind 'synth2'"):  # the name must match
        get_kind("synth2")
    assert get_kind("synth").param("seed").type is ParamType.INT


def test_grid_parameters_are_read_from_the_commands_parser() -> None:
    """Flags, types, choices and required come from the command's options, not from the sweep."""
    certify = {p.name: p for p in get_kind("certify").params}
    assert [p.name for p in get_kind("certify").params] == [
        "problem",
        "p",
        "svm",
        "alpha",
        "digits",
        "time_limit",
    ]
    assert (certify["problem"].type, certify["problem"].flag, certify["problem"].required) == (
        ParamType.FILE,
        None,
        True,
    )
    assert (certify["p"].type, certify["p"].required) == (ParamType.DECIMAL, True)
    assert (
        certify["svm"].choices == ("attention", "decoder")
        and certify["time_limit"].type is ParamType.FLOAT
    )
    assert certify["time_limit"].flag == "--time-limit"
    paths = {p.name: p for p in get_kind("paths").params}
    assert (
        paths["problem"].flag is None and not paths["problem"].required
    )  # PROBLEM ... may be empty
    assert paths["train_decoder"].type is ParamType.BOOL and paths["dtype"].choices == (
        "float64",
        "float32",
    )
    study = {p.name: p for p in get_kind("study").params}
    assert study["seed"].flag == "--seed-start" and "sentiment" in study["study"].choices


def test_a_kind_naming_an_option_its_command_lacks_is_one_line(monkeypatch) -> None:
    import dataclasses

    stale = dataclasses.replace(get_kind("synth"), name="synth2", grid=("n", "size"))
    monkeypatch.setitem(KINDS, "synth2", "experiments.sweep.commands:SYNTH")
    with pytest.raises(
        MdcertError, match=r"^sweep kind 'synth2': mdcert synth has no option for grid\.size$"
    ):
        stale.params
