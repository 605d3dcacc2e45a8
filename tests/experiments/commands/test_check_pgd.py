"""`experiments.commands.check.pgd`: ``mdcert check PROBLEM --theorem pgd`` on a classification
problem (the p-GD hypotheses, docs/theory.md section 7.6) through the check command's
``parse -> run -> Result`` shape, its JSON report, and the one-line refusals of a theorem on the
other kind of problem and of the attention options."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.synth import classification_problem, synthetic_problem
from experiments.cli.main import build_parser, main
from experiments.commands import parse
from experiments.commands.check import Config, run
from experiments.commands.check.pgd import PgdResult
from theorems.verdict import Verdict


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("checkpgd")
    classification_problem(n=16, d=3, classes=None, separable=True, seed=1).save(d / "sep.npz")
    X = np.array([[1.0, 2.0], [1.0, 2.0], [0.5, -1.0], [2.0, 1.0]])  # point 0 twice, labels differ
    ClassificationProblem(X=X, y=np.array([1.0, -1.0, 1.0, 1.0])).save(d / "conflict.npz")
    synthetic_problem(n=2, T=3, d=2, seed=0).save(d / "att.npz")
    return d


def _verdicts(result) -> dict:
    return {h.name: h.verdict for h in result.report.hypotheses}


def test_planted_separable_data_hold(files) -> None:
    result = run(parse("check", [str(files / "sep.npz"), "--theorem", "pgd", "--p", "1.5"]))
    assert isinstance(result, PgdResult) and result.exit_code == 0
    v = _verdicts(result)
    assert v["separable"] is Verdict.HOLDS and v["loss_exponential_tail"] is Verdict.HOLDS
    assert v["step_size_measured"] is Verdict.UNDECIDED  # no path: not checked
    assert result.report.quantities["max_margin"]["checker"] == "accepted"
    text = "\n".join(result.lines(100))
    assert "Theorem pgd" in text and "2205.12808" in text and "||w_p||_p in [" in text


def test_the_path_is_run_by_the_pgd_engine_and_measured_at_every_record(files) -> None:
    argv = [str(files / "sep.npz"), "--theorem", "pgd", "--p", "2", "--lr", "0.1"]
    result = run(parse("check", [*argv, "--steps", "300"]))
    path = result.report.quantities["path"]
    assert path["engine"].startswith("experiments.linear.run_pgd") and path["steps"] == 300
    assert path["smoothness_samples"] == path["records"] - 1  # every record after w(0)
    assert path["final_bregman"] is not None and path["final_bregman"] >= 0
    assert _verdicts(result)["step_size_measured"] is Verdict.UNDECIDED
    assert "path: 300 constant steps, lr 0.1" in "\n".join(result.lines(200))


def test_a_duplicated_point_with_opposite_labels_fails_with_a_gordan_certificate(
    files, tmp_path
) -> None:
    out = tmp_path / "report.json"
    argv = [str(files / "conflict.npz"), "--theorem", "pgd", "--p", "2", "--json", str(out)]
    assert main(["check", *argv]) == 0
    report = json.loads(out.read_text())
    assert report["theorem"] == "pgd" and report["verdict"] == "fails"
    sep = report["hypotheses"][0]
    assert sep["name"] == "separable" and sep["verdict"] == "fails" and "Gordan" in sep["message"]
    assert report["quantities"]["max_margin"]["status"] == "infeasible"
    assert set(report["quantities"]["hypothesis_sources"]) == {
        "separable",
        "loss_exponential_tail",
        "step_size_measured",
    }
    assert report["inputs"]["theorem"] == "pgd" and report["inputs"]["p"] == "2"
    assert report["conclusion"]["status"] == "to measure"


def test_parse_equals_the_cli_config(files) -> None:
    argv = [str(files / "sep.npz"), "--theorem", "pgd", "--p", "2", "--lr", "0.1", "--normalize"]
    cli = Config.from_options(vars(build_parser()[0].parse_args(["check", *argv])))
    assert parse("check", argv) == cli and cli.theorem == "pgd" and cli.step_rule == "normalized"


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (
            ["sep.npz", "--p", "2"],
            r"^'.*sep\.npz' is a classification problem; theorem 10 is about attention problems: "
            r"check the p-GD result on it with --theorem pgd$",
        ),
        (
            ["att.npz", "--p", "2", "--theorem", "pgd"],
            r"^'.*att\.npz' is an attention problem; --theorem pgd needs a classification problem "
            r".*--theorem 6, 8, 10, 11 or 31$",
        ),
    ],
)
def test_a_theorem_on_the_other_kind_of_problem_is_refused(files, argv, pattern) -> None:
    argv = [str(files / argv[0]), *argv[1:]]
    with pytest.raises(MdcertError) as info:
        run(parse("check", argv))
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "extra, pattern",
    [
        (["--alpha", "opt", "--mu", "1"], r"takes no --alpha, --mu: those are options of the att"),
        (["--segment"], r"takes no --segment"),
        (["--loss", "hinge"], r"exponential tail: --loss logistic or exponential, got 'hinge'$"),
        (["--normalize"], r"^--normalize is the step rule of a p-GD path: give --lr too$"),
        (["--lr", "0.1", "--p", "25"], r"outside the range of the p-GD path engine, \(1, 20\]"),
        (["--lr", "0"], r"step size must be a float64"),
        (["--steps", "0"], r"^invalid --steps 0"),
    ],
)
def test_bad_pgd_options_are_one_line_before_any_work(files, extra, pattern) -> None:
    argv = [str(files / "sep.npz"), "--theorem", "pgd", "--p", "2", *extra]
    with pytest.raises((MdcertError, ValueError)) as info:
        parse("check", argv)
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value)


def test_an_unknown_theorem_names_pgd_too(files) -> None:
    with pytest.raises(MdcertError, match=r"or pgd \(the p-GD result, classification problems\)"):
        parse("check", [str(files / "sep.npz"), "--theorem", "7", "--p", "2"])
