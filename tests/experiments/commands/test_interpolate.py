"""`experiments.commands.interpolate`: validation in `Config.from_options` (one line each, before
any work), `parse` equal to the CLI's config, and run -> write -> lines round trips."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import RegressionProblem, regression_problem
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.interpolate import Config, run


def _options(**kw) -> dict:
    base = dict(
        p="1.5",
        potential="lp",
        alpha=None,
        output=None,
        export_beta=None,
        bits=200,
        assumptions=False,
        synth=None,
        N=5,
        D=None,
        seed=0,
    )
    return {**base, **kw}


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(p="1"), r"p > 1"),
        (dict(bits=4), r"^invalid --bits 4; give 16\.\.4096$"),
        (dict(output="{tmp}/c.txt"), r"^-o '.*c\.txt': use a \.json file name$"),
        (dict(export_beta="{tmp}/b.json"), r"^--export-beta '.*b\.json': use a \.npy file name$"),
        (dict(output="{tmp}/reg.json"), r"is the problem file"),
        (dict(synth="block", N=0), r"^--N must be in 1\.\.1e5 and --D in 1\.\.1e6$"),
        (
            dict(synth="block", problem="{tmp}/reg.txt"),
            r"^PROBLEM '.*reg\.txt': use a \.npz or \.json file name$",
        ),
    ],
)
def test_bad_options_are_one_line_before_any_work(tmp_path, kw, pattern) -> None:
    kw = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in kw.items()}
    with pytest.raises(MdcertError) as err:
        Config.from_options(_options(**{"problem": str(tmp_path / "reg.json"), **kw}))
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_parse_equals_the_cli_config(tmp_path) -> None:
    argv = [
        str(tmp_path / "reg.npz"),
        "--p",
        "3/2",
        "-o",
        str(tmp_path / "c.json"),
        "--bits",
        "64",
        "--assumptions",
        "--synth",
        "block",
        "--N",
        "4",
        "--seed",
        "2",
    ]
    parser, _ = build_parser()
    config = parse("interpolate", argv)
    assert config == Config.from_options(vars(parser.parse_args(["interpolate", *argv])))
    assert (
        config.p == Fraction(3, 2) and config.bits == 64 and config.assumptions and config.D is None
    )


def test_run_write_lines_round_trip(tmp_path) -> None:
    reg, out, beta = tmp_path / "reg.npz", tmp_path / "c.json", tmp_path / "beta.npy"
    config = parse(
        "interpolate",
        [
            str(reg),
            "--p",
            "1.5",
            "-o",
            str(out),
            "--export-beta",
            str(beta),
            "--synth",
            "gaussian",
            "--N",
            "3",
            "--assumptions",
        ],
    )
    result = run(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reg.npz"]  # the --synth input only
    result.write()
    assert json.loads(out.read_text())["status"] == "optimal" and np.load(beta).shape == (6,)
    lines = result.lines(100)
    assert lines[0] == f"wrote {reg}: gaussian regression data N=3 D=6 seed=0"
    assert lines[1].startswith("assumption_3_2: ") and lines[2].startswith("assumption_3_8: ")
    assert lines[3].startswith("problem: N=3 D=6 (") and lines[3].endswith("p = 3/2")
    assert lines[4].startswith("OPT = min ||beta||_p in [")
    assert lines[-2:] == [f"wrote {out}", f"wrote {beta} (beta~ as float64, rounded once)"]
    assert result.exit_code == 0 and result.messages() == []


def test_inconsistent_data_exit_3_and_overdetermined_data_warn(tmp_path) -> None:
    X = np.array([[1.0, 1.0], [1.0, 1.0]])
    RegressionProblem(X, np.array([1.0, -2.0])).save(tmp_path / "sq.npz")
    result = run(parse("interpolate", [str(tmp_path / "sq.npz"), "--p", "3"]))
    assert result.exit_code == 3 and "X beta = y has no solution" in "\n".join(result.lines(100))
    assert result.messages()[0].startswith(
        "warning: N = 2 >= D = 2: the sign-descent theory needs D > N"
    )
    assert regression_problem("block", N=2, seed=0).D == 4


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(p=None), r"^the following arguments are required: --p \(or --potential psi"),
        (dict(alpha="0.1"), r"^--alpha applies to --potential psi only$"),
        (dict(potential="psi"), r"^--p does not apply to --potential psi"),
        (dict(potential="psi", p=None), r"^--potential psi needs --alpha A"),
        (dict(potential="psi", p=None, alpha="0"), r"^alpha must be a positive rational"),
        (dict(potential="psi", p=None, alpha="abc"), r"not an exact rational"),
    ],
)
def test_bad_potential_options_are_one_line_before_any_work(tmp_path, kw, pattern) -> None:
    with pytest.raises(MdcertError) as err:
        Config.from_options(_options(**{"problem": str(tmp_path / "reg.json"), **kw}))
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_the_psi_potential_round_trip(tmp_path) -> None:
    reg, out, beta = tmp_path / "reg.npz", tmp_path / "c.json", tmp_path / "beta.npy"
    argv = [str(reg), "--potential", "psi", "--alpha", "0.1", "-o", str(out)]
    argv += ["--export-beta", str(beta), "--synth", "gaussian", "--N", "3"]
    config = parse("interpolate", argv)
    parser, _ = build_parser()
    assert config == Config.from_options(vars(parser.parse_args(["interpolate", *argv])))
    assert config.potential == "psi" and config.alpha == Fraction(1, 10) and config.p is None
    result = run(config)
    result.write()
    data = json.loads(out.read_text())
    assert data["format"] == "mdcert-psi-interpolation-1" and data["status"] == "optimal"
    assert data["alpha"] == "1/10" and np.load(beta).shape == (6,)
    lines = result.lines(100)
    assert lines[1].startswith("problem: N=3 D=6 (") and lines[1].endswith(
        "potential psi, alpha = 1/10"
    )
    assert lines[2].startswith("OPT = min Q_alpha(beta) in [")
    assert lines[3].startswith("||beta^ - beta*||_2 <= ")
    assert lines[-2:] == [f"wrote {out}", f"wrote {beta} (beta^ as float64, rounded once)"]
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(potential="E", p=None), r"^--potential E needs --v FILE.npy"),
        (dict(potential="E", v_file="v.npy"), r"^--p and --alpha do not apply to --potential E"),
        (dict(v_file="v.npy"), r"^--v applies to --potential E only$"),
    ],
)
def test_bad_e_options_are_one_line_before_any_work(tmp_path, kw, pattern) -> None:
    with pytest.raises(MdcertError) as err:
        Config.from_options(_options(**{"problem": str(tmp_path / "reg.json"), **kw}))
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_the_e_potential_round_trip(tmp_path) -> None:
    reg, out, beta, v = (tmp_path / n for n in ("reg.npz", "c.json", "beta.npy", "v.npy"))
    np.save(v, np.array([0.1, 0.0, 1e-3, 0.5, 0.0, 0.25]))
    argv = [str(reg), "--potential", "E", "--v", str(v), "-o", str(out)]
    argv += ["--export-beta", str(beta), "--synth", "gaussian", "--N", "3"]
    config = parse("interpolate", argv)
    assert config.potential == "E" and config.v_file == str(v) and config.p is None
    result = run(config)
    result.write()
    data = json.loads(out.read_text())
    assert data["format"] == "mdcert-e-interpolation-1" and data["status"] == "optimal"
    lines = result.lines(100)
    assert lines[1].endswith(f"potential E, v from {v}")
    assert lines[2].startswith("OPT = min E(beta) in [")
    assert lines[3].startswith("||beta^ - beta*||_2 <= ")
    assert lines[-2:] == [f"wrote {out}", f"wrote {beta} (beta^ as float64, rounded once)"]
    assert result.exit_code == 0
    np.save(v, np.zeros(5))
    with pytest.raises(MdcertError, match=r"v must have D = 6 entries, got 5"):
        run(config)
    with pytest.raises(MdcertError, match=r"the --v file"):
        Config.from_options(
            _options(problem=str(reg), potential="E", p=None, v_file=str(v), export_beta=str(v))
        )


def test_a_bad_v_file_is_one_line(tmp_path) -> None:
    from experiments.commands.interpolate import load_v

    with pytest.raises(MdcertError, match=r"^--v .*not a readable .npy array"):
        load_v(str(tmp_path / "missing.npy"), 3)
    np.savez(tmp_path / "v.npz", v=np.zeros(3))
    with pytest.raises(MdcertError, match=r"^--v .*not a .npy array"):
        load_v(str(tmp_path / "v.npz"), 3)
    np.save(tmp_path / "nan.npy", np.array([0.0, np.nan, 1.0]))
    with pytest.raises(MdcertError, match=r"v"):
        load_v(str(tmp_path / "nan.npy"), 3)
    np.save(tmp_path / "ok.npy", np.array([0.0, 0.5, 1.0]))
    assert load_v(str(tmp_path / "ok.npy"), 3).tolist() == [0.0, 0.5, 1.0]
