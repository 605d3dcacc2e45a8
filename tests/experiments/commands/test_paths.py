"""experiments.commands.paths: ``Config.from_options`` refuses bad options in one line before any work,
``parse("paths", argv)`` is the CLI's config, and ``run(config) -> Result -> write`` round-trips."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from certify import synthetic_problem
from certify.errors import MdcertError
from experiments.commands import COMMAND_MODULES, module, parse
from experiments.commands.paths import Config, Result, run

TINY = {
    "trials": 1,
    "n": 2,
    "T": 3,
    "d": 2,
    "p": "2",
    "steps": "5",
    "workers": 0,
    "progress": "off",
}


def _options(tmp_path, **extra) -> dict:
    return {**TINY, "out": str(tmp_path / "run"), **extra}


BAD = [
    ({"steps": "abc"}, r"^--steps must be integers, got 'abc'$"),
    ({"steps": "1000000000000"}, r"^--steps must be at most 1e\+09"),
    ({"steps": "0"}, r"^--steps must be >= 1"),
    ({"p": "2,3", "steps": "1,2,3"}, r"--steps has 3 values but --p has 2"),
    ({"p": "2,2"}, r"--p lists a value twice"),
    ({"p": "1"}, r"p > 1"),
    ({"p": "1e400"}, r"outside the range of the float64 training paths"),
    ({"lr": "-0.1"}, r"^--lr values must be finite and > 0, got '-0.1'$"),
    ({"lr": "nan"}, r"finite and > 0"),
    ({"lr": "0.1,,0.2"}, r"without empty items"),
    ({"trials": 0}, r"^--trials must be >= 1, got 0$"),
    ({"T": 1}, r"^--T must be >= 2"),
    ({"d": 9999999}, r"^--d must be at most"),
    ({"records": 1}, r"^--records must be >= 2"),
    ({"tail": 1.0}, r"^--tail must be in \[0, 1\)"),
    ({"digits": 0}, r"^--digits must be in 1\.\.2000"),
    ({"decoder_lr": float("nan")}, r"^--decoder-lr must be finite"),
    ({"seed": -1}, r"^--seed must be in 0\.\.2\*\*63-1"),
    ({"workers": -1}, r"^--workers must be >= 0"),
    ({"device": "tpu"}, r"^unknown device 'tpu'"),
    ({"dtype": "float16"}, r"^--dtype must be one of float64, float32"),
    ({"trials": 100000, "records": 100000}, r"would need about .* of memory"),
    ({"init": "W0.npy", "inits": 2}, r"cannot be combined with --init-std or --inits"),
    ({"init_std": 0.0}, r"^--init-std must be finite and > 0"),
    ({"problems": ["a.npz"]}, r"--trials, --n, --T, --d describe synthetic trials"),
]


@pytest.mark.parametrize("extra, pattern", BAD)
def test_bad_options_are_one_line_errors(tmp_path, extra, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern) as info:
        Config.from_options(_options(tmp_path, **extra))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "run").exists()


def test_run_directory_holding_an_input_is_refused(tmp_path) -> None:
    with pytest.raises(MdcertError, match=r"^-o .* contains the problem file"):
        Config.from_options(
            {
                **_options(tmp_path),
                "trials": None,
                "n": None,
                "T": None,
                "d": None,
                "problems": [str(tmp_path / "run" / "a.npz")],
            }
        )


def test_cuda_without_cuda_is_refused_by_the_config(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(MdcertError, match=r"device 'cuda' requested but CUDA is not available"):
        Config.from_options(_options(tmp_path, device="cuda"))


def test_defaults_and_problem_files_leave_sizes_to_the_files(tmp_path) -> None:
    cfg = Config.from_options({"out": str(tmp_path / "run"), "workers": 0})
    assert (cfg.trials, cfg.n, cfg.T, cfg.d, cfg.inits) == (100, 6, 8, 10, 1)
    assert cfg.p == (Fraction(7, 4), Fraction(2), Fraction(3)) and cfg.steps == (1500, 2000, 20000)
    assert cfg.certify and cfg.show_progress is None and cfg.argv == ()
    on_file = Config.from_options(
        {"out": str(tmp_path / "run"), "problems": ["a.npz"], "init": "W.npy"}
    )
    assert (on_file.trials, on_file.n, on_file.T, on_file.d, on_file.inits) == (None,) * 5
    with pytest.raises(AttributeError):
        cfg.seed = 1  # frozen


def test_parse_is_the_cli_config(tmp_path) -> None:
    from experiments.cli.main import build_parser

    assert COMMAND_MODULES["paths"] == "experiments.commands.paths" and module("paths").run is run
    argv = [
        "--trials",
        "2",
        "--p",
        "1.75,3",
        "--steps",
        "40,60",
        "--lr",
        "0.1,0.05",
        "--normalize",
        "--cross",
        "--records",
        "12",
        "--workers",
        "0",
        "--device",
        " CPU",
        "-o",
        str(tmp_path / "r"),
    ]
    ours = parse("paths", argv)
    cli = Config.from_options(
        vars(build_parser()[0].parse_args(["paths", *argv])) | {"argv": ["x"]}
    )
    assert ours == cli and cli.argv == ("x",)
    assert ours.device == "cpu" and ours.lr == (0.1, 0.05) and ours.p_text == ("1.75", "3")
    with pytest.raises(ValueError, match=r"invalid choice: 'float16'"):
        parse("paths", ["--dtype", "float16", "-o", "r"])
    with pytest.raises(ValueError, match=r"^--steps must be integers"):
        parse("paths", ["--steps", "abc", "-o", "r"])


def test_run_write_round_trip(tmp_path) -> None:
    cfg = Config.from_options(
        _options(
            tmp_path,
            trials=2,
            p="1.5,3",
            lr="0.1",
            no_certify=True,
            records=4,
            argv=["paths", "-o", "run"],
        )
    )
    result = run(cfg)
    assert isinstance(result, Result) and result.exit_code == 0
    assert not (tmp_path / "run").exists()  # run writes nothing
    s = result.summary
    assert s["trajectories"] == 4 and s["certificates"] is None and result.certificates is None
    assert result.lines(80)[0].startswith("paths: 4 trajectories on cpu in ")
    result.write(tmp_path / "run")
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["kind"] == "paths" and on_disk["argv"] == ["paths", "-o", "run"]
    assert (
        on_disk["elapsed_s"] > 0
        and on_disk["config"]["n"] == 2
        and on_disk["config"]["certify"] is False
    )
    assert [e["p_exact"] for e in on_disk["per_p"]] == ["3/2", "3/1"]
    a = np.load(tmp_path / "run" / "arrays.npz")
    assert a["W"].shape[0] == 4 and np.array_equal(
        a["X"][1], synthetic_problem(n=2, T=3, d=2, seed=1).X
    )
    assert not (tmp_path / "run" / "certificates.jsonl.gz").exists()
    text = result.lines(60)
    assert text[0].endswith(f"-> {tmp_path / 'run'}") and all(len(ln) <= 60 for ln in text[1:])


def test_certified_run_writes_its_certificates(tmp_path) -> None:
    cfg = Config.from_options(_options(tmp_path, steps="20", normalize=True, records=4))
    result = run(cfg)
    result.write(tmp_path / "run")
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["certificates"]["unique"] >= 1 and s["per_p"][0]["bregman_final_mean"] is not None
    import gzip

    lines = [json.loads(ln) for ln in gzip.open(tmp_path / "run" / "certificates.jsonl.gz", "rt")]
    assert len(lines) == len(result.certificates) == s["certificates"]["unique"]
    assert {ln["p"] for ln in lines} == {"2/1"}
