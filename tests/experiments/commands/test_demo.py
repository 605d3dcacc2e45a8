"""`experiments.commands.demo`: validation in `Config.from_options` (one line each, before anything
is created), `parse` equal to the CLI's config, and runs through a fake runner (fast): a failed
stage removes the partial ``-o`` directory, a completed one is a ``demo`` run directory."""

from __future__ import annotations

import re

import pytest

import experiments.commands.demo as demo
import experiments.commands.demo_facts as demo_facts
from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.demo import Config, run


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(p="1"), r"--p > 1"),
        (dict(p="1e400"), r"^--p 1e400 is outside the range of the float64 training paths"),
        (dict(seed=-1), r"^invalid --seed -1; give an integer in 0\.\.2\*\*63-1$"),
        (dict(out=""), r"^-o is empty; give a new directory name$"),
        (dict(out="{tmp}"), r"^output directory '.*' already exists; choose a new one$"),
        (dict(out="/proc/mdcert-demo"), r"not writable"),
    ],
)
def test_bad_options_are_one_line_before_anything_is_created(tmp_path, kw, pattern) -> None:
    kw = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in kw.items()}
    with pytest.raises(MdcertError) as err:
        Config.from_options({"quick": True, "seed": 7, "p": "1.75", "out": None, **kw})
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_parse_equals_the_cli_config(tmp_path) -> None:
    argv = ["--quick", "--seed", "3", "--p", "2", "-o", str(tmp_path / "demo")]
    parser, _ = build_parser()
    config = parse("demo", argv)
    assert config == Config.from_options(vars(parser.parse_args(["demo", *argv])))
    assert config == Config(quick=True, seed=3, p="2", out=str(tmp_path / "demo"))
    assert parse("demo", []) == Config()


def test_a_failed_stage_stops_the_demo_and_removes_its_directory(tmp_path, capsys) -> None:
    calls = []
    out = tmp_path / "demo"
    result = run(
        parse("demo", ["--quick", "-o", str(out)]), runner=lambda argv: calls.append(argv) or 5
    )
    assert (
        [argv[0] for argv in calls] == ["synth"]
        and result.exit_code == 1
        and result.lines(80) == []
    )
    assert result.messages() == [
        f"mdcert demo: demo stage '1. synthesize the paper-size problem (n=6, T=8, d=10)' "
        f"exited with code 5; removed the partial {str(out)!r}"
    ]
    assert not out.exists() and "$ mdcert synth --seed 7 -o" in capsys.readouterr().out


def test_a_completed_demo_is_a_run_directory_with_a_summary(tmp_path, monkeypatch, capsys) -> None:
    from experiments.runtime.outputs import read_marker

    for name, value in (("cert_facts", "cert"), ("check_facts", "check"), ("paths_facts", "paths")):
        monkeypatch.setattr(demo, name, lambda *a, value=value: value)
    monkeypatch.setattr(demo, "region_quantities", lambda path: [])
    monkeypatch.setattr(demo, "near_svm_init", lambda cert, out, seed: str(out))
    calls = []
    out = tmp_path / "demo"
    result = run(
        parse("demo", ["--quick", "-o", str(out)]), runner=lambda argv: calls.append(argv[0]) or 0
    )
    assert (
        calls == ["synth", "certify", "verify", "check", "paths", "plot"] and result.exit_code == 0
    )
    result.write()
    lines = result.lines(80)
    assert lines[1].startswith("== summary") and [
        ln.split(".")[0].strip() for ln in lines[2:8]
    ] == list("123456")
    assert lines[2:6] == [
        "  1. wrote the paper's synthetic problem (n=6, T=8, d=10) and its globally optimal tokens",
        "  2. cert",
        "  3. the independent checker (no solver) re-proved every claim of the "
        "certificate from the data",
        "  4. check",
    ]
    assert lines[-1].startswith("demo finished in ") and lines[-1].endswith(f"; outputs in {out}")
    assert read_marker(out)["kind"] == "demo" and result.messages() == []
    assert capsys.readouterr().out.count("=> ") == 6


def test_check_facts_state_the_region_for_the_given_mu_and_R(tmp_path) -> None:
    import json

    rep = {
        "theorem": "10",
        "verdict": "fails",
        "quantities": {"mu": "1/2", "R": "1"},
        "hypotheses": [
            {
                "name": "init_in_region",
                "verdict": "holds",
                "evidence": [
                    {"quantity": "OPT = ||W_mm||_p", "lo_approx": 4.25, "hi_approx": 4.25}
                ],
            }
        ],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rep))
    assert demo_facts.check_facts(str(path)) == (
        "Theorem 10: 1 of 1 hypotheses proved, verdict FAILS; "
        "init_in_region HOLDS for the given mu = 0.5, R = 1"
    )
