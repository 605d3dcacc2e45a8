"""`experiments.commands.verify`: validation in `Config.from_options` (one line each, before any
work), `parse` equal to the CLI's config, and run -> write -> lines round trips (attention data with
an export, a tampered certificate, an interpolation certificate of regression data)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from certify import synthetic_problem
from certify.errors import MdcertError
from certify.regression import certify_interpolation, load_regression, regression_problem
from experiments.cli.main import build_parser
from experiments.commands import module, parse
from experiments.commands.verify import Config, run


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    problem, cert = d / "problem.npz", d / "cert.json"
    synthetic_problem(n=3, T=4, d=3, seed=5).save(problem)
    module("certify").run(
        parse("certify", [str(problem), "--p", "2", "--digits", "20", "-o", str(cert)])
    ).write()
    reg, reg_cert = d / "reg.npz", d / "reg.json"
    regression_problem("gaussian", N=3, D=6, seed=1).save(reg)
    solve = certify_interpolation(load_regression(reg), "1.5")
    reg_cert.write_text(json.dumps(solve.certificate.to_json()))
    return problem, cert, reg, reg_cert


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(p="junk"), r"^invalid p"),
        (dict(p="1"), r"p > 1"),
        (dict(export_w="{tmp}/W.txt"), r"--export-w .*W\.txt': use a \.npy file name"),
        (dict(export_w="{tmp}/W.npy", export_direction="{tmp}/W.npy"), r"name the same file"),
        (dict(regression=True, svm="decoder"), r"^--svm does not apply to a regression problem$"),
        (dict(regression=True, alpha="opt"), r"^--alpha does not apply to a regression problem$"),
        (
            dict(regression=True, export_w="{tmp}/W.npy"),
            r"^--export-w does not apply to a regression problem$",
        ),
    ],
)
def test_bad_options_are_one_line_before_any_work(files, tmp_path, kw, pattern) -> None:
    problem, cert, reg, reg_cert = files
    regression = kw.pop("regression", False)
    kw = {k: v.replace("{tmp}", str(tmp_path)) for k, v in kw.items()}
    options = dict(
        problem=str(reg if regression else problem),
        certificate=str(reg_cert if regression else cert),
        p=None,
        svm=None,
        alpha=None,
        verbose=False,
        export_w=None,
        export_direction=None,
    )
    with pytest.raises(MdcertError) as err:
        Config.from_options({**options, **kw})
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_parse_equals_the_cli_config(files, tmp_path) -> None:
    problem, cert, reg, reg_cert = files
    argv = [
        str(problem),
        str(cert),
        "--p",
        "2",
        "--svm",
        "attention",
        "-v",
        "--export-w",
        str(tmp_path / "W.npy"),
    ]
    parser, _ = build_parser()
    config = parse("verify", argv)
    assert config == Config.from_options(vars(parser.parse_args(["verify", *argv])))
    assert config.p == 2 and config.verbose and not config.regression
    assert parse("verify", [str(reg), str(reg_cert)]).regression


def test_run_write_lines_round_trip_with_an_export(files, tmp_path) -> None:
    problem, cert, _, _ = files
    W = tmp_path / "W.npy"
    result = run(parse("verify", [str(problem), str(cert), "--p", "2", "-v", "--export-w", str(W)]))
    assert not list(tmp_path.iterdir())  # run writes nothing
    result.write()
    assert np.load(W).shape == (3, 3) and result.exit_code == 0 and result.messages() == []
    lines = result.lines(100)
    claims = [ln for ln in lines if ln.startswith("  ok   ")]
    assert claims and not [ln for ln in lines if "FAIL" in ln]
    assert f"verified: all {len(claims)} claims hold (status optimal, " in lines[len(claims)]
    assert lines[-1] == f"wrote {W} (point)"


def test_a_tampered_certificate_is_not_verified_and_exports_nothing(files, tmp_path) -> None:
    problem, cert, _, _ = files
    data = json.loads(cert.read_text())
    data["opt_lower"] = data["opt_upper"] = "1/3"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run(parse("verify", [str(problem), str(bad), "--export-w", str(tmp_path / "W.npy")]))
    result.write()
    assert (
        result.exit_code == 1
        and result.lines(100) == []
        and sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]
    )
    [line] = result.messages()
    assert line.startswith("NOT verified: ")


def test_an_interpolation_certificate_is_verified(files) -> None:
    _, _, reg, reg_cert = files
    result = run(parse("verify", [str(reg), str(reg_cert), "--p", "3/2", "-v"]))
    lines = result.lines(100)
    assert result.exit_code == 0 and all(ln.startswith("  ok   ") for ln in lines[:-1])
    assert lines[-1].startswith(f"verified: all {len(lines) - 1} claims hold (status optimal, ")
    other = run(parse("verify", [str(reg), str(reg_cert), "--p", "2"]))
    assert other.exit_code == 1 and other.messages()[0].startswith("NOT verified: p")


def test_a_psi_certificate_is_verified_and_a_tampered_one_is_not(files, tmp_path) -> None:
    from certify.regression import certify_psi

    _, _, reg, _ = files
    cert = tmp_path / "psi.json"
    data = certify_psi(load_regression(reg), "1/4").certificate.to_json()
    cert.write_text(json.dumps(data))
    result = run(parse("verify", [str(reg), str(cert), "-v"]))
    lines = result.lines(100)
    assert result.exit_code == 0 and all(ln.startswith("  ok   ") for ln in lines[:-1])
    assert [ln.split()[1] for ln in lines[:-1]] == [
        "data_hash",
        "shape",
        "feasible",
        "opt_upper",
        "opt_lower",
        "distance_upper",
    ]
    with pytest.raises(MdcertError, match=r"^--p does not apply to a psi certificate"):
        run(parse("verify", [str(reg), str(cert), "--p", "2"]))
    data["opt_lower"] = data["opt_upper"]
    data["opt_upper"] = "0/1"
    cert.write_text(json.dumps(data))
    bad = run(parse("verify", [str(reg), str(cert)]))
    assert bad.exit_code == 1 and bad.messages()[0].startswith("NOT verified: opt_upper")


def test_an_e_certificate_is_verified_and_a_tampered_one_is_not(files, tmp_path) -> None:
    from certify.regression import certify_e

    _, _, reg, _ = files
    problem = load_regression(reg)
    cert = tmp_path / "e.json"
    v = np.linspace(0.0, 0.5, problem.D)
    data = certify_e(problem, v).certificate.to_json()
    cert.write_text(json.dumps(data))
    result = run(parse("verify", [str(reg), str(cert), "-v"]))
    lines = result.lines(100)
    assert result.exit_code == 0 and all(ln.startswith("  ok   ") for ln in lines[:-1])
    assert [ln.split()[1] for ln in lines[:-1]] == [
        "data_hash",
        "shape",
        "feasible",
        "opt_upper",
        "opt_lower",
        "distance_upper",
    ]
    with pytest.raises(MdcertError, match=r"^--p does not apply to an E certificate"):
        run(parse("verify", [str(reg), str(cert), "--p", "2"]))
    data["distance_upper"] = "1/1000000000000000000000000000000000000000000000000000000000000"
    cert.write_text(json.dumps(data))
    bad = run(parse("verify", [str(reg), str(cert)]))
    assert bad.exit_code == 1 and bad.messages()[0].startswith("NOT verified: distance_upper")
