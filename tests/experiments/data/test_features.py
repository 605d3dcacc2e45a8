"""experiments/data/features.py (and ``mdcert study pgd --save-features``): the last hidden layer of a
trained network as a K = 10 classification problem, exact, with provenance; bad input in one line."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from certify.classification import load_problem
from certify.errors import MdcertError
from experiments.cli.main import main
from experiments.data.features import features_file, features_points

TINY = [
    "--quick",
    "--task",
    "digits",
    "--epochs",
    "2",
    "--width",
    "8",
    "--optimizers",
    "2",
    "--seeds",
    "1",
    "--cert-seeds",
    "0",
    "--timing-repeats",
    "2",
    "--progress",
    "off",
    "--workers",
    "1",
]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("pgdfeat") / "s"
    assert main(["study", "pgd", *TINY, "--save-features", "-o", str(root)]) == 0
    return root


def test_the_study_writes_features_of_its_final_runs_only(study) -> None:
    [path] = sorted((study / "features").glob("*.npz"))
    record = json.loads((study / "runs" / f"{path.stem}.json").read_text())
    assert record["config"]["phase"] == "final" and record["config"]["p"] == "2"
    with np.load(path) as fh:
        assert str(fh["format"]) == "mdcert-pgd-features/1"
        assert fh["train_features"].shape == (len(fh["train_ids"]), 4)  # width 8: 4 features
        assert fh["head_weight"].shape == (10, 4) and fh["head_bias"].shape == (10,)
        assert json.loads(str(fh["record"]))["key"] == path.stem


def test_features_problem_is_exact_with_provenance(study, tmp_path) -> None:
    from sklearn.datasets import load_digits

    data = features_points(study=study, split="train")
    path = features_file(study, None)
    with np.load(path) as fh:
        H, labels = fh["train_features"], fh["train_labels"]
    assert np.array_equal(data.X[:, :4], H) and np.all(data.X[:, 4] == 1.0)
    assert np.array_equal(data.X[:, :4], H.astype(np.float32).astype(np.float64))
    rec = data.provenance
    assert rec["source"] == "features" and rec["study"]["run"] == path.stem
    assert rec["study"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert np.array_equal(load_digits().target[rec["selection"]["ids"]], labels)
    assert sum(rec["labels"]["counts"].values()) == len(labels)
    problem = data.problem()
    out = tmp_path / "f.npz"
    problem.save(out)
    back = load_problem(out)
    assert back.kind == "multiclass" and back.classes == 10
    assert back.X.tobytes() == data.X.tobytes() and back.provenance == problem.provenance
    small = features_points(study=study, run=path.stem[:8], split="test", n=200, seed=1, bias=False)
    assert small.X.shape == (200, 4) and small.provenance["features"]["split"] == "test"


def test_the_cli_reads_a_prefix_of_the_run_key(study, tmp_path, capsys) -> None:
    key = features_file(study, None).stem
    out = tmp_path / "f.json"
    argv = ["data", "features", "--study", str(study), "--run", key[:6], "-o", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: features classification n=")
    assert load_problem(out).d == 5


@pytest.mark.parametrize(
    "make, kw, pattern",
    [
        (None, {}, r"is not a study directory \(no readable study.json\)"),
        ({"kind": "vision"}, {}, r"is a 'vision' study; give a pgd study"),
        ({"kind": "pgd"}, {}, r"holds no features/\*\.npz; rerun the study with --save-features"),
    ],
)
def test_bad_study_directories(tmp_path, make, kw, pattern) -> None:
    if make is not None:
        (tmp_path / "study.json").write_text(json.dumps(make))
    with pytest.raises(MdcertError, match=pattern) as err:
        features_points(study=tmp_path, **kw)
    assert "\n" not in str(err.value)


def test_bad_run_split_and_n(study) -> None:
    with pytest.raises(MdcertError, match=r"^--run zz matches no run of the 1 with features"):
        features_points(study=study, run="zz")
    with pytest.raises(MdcertError, match=r"^unknown --split 'val'"):
        features_points(study=study, split="val")
    with pytest.raises(MdcertError, match=r"^invalid --n 100000: the train split has \d+ images"):
        features_points(study=study, n=100000)
    with pytest.raises(MdcertError, match=r"^digit \d has no example among the 3 drawn"):
        features_points(study=study, n=3)
