"""experiments/data/regfile.py: regression files with a provenance record; certify reads them."""

from __future__ import annotations

import numpy as np
import pytest

from certify.regression import RegressionProblem, load_regression
from experiments.data import points as pts
from experiments.data.regfile import load_regression_with_provenance, save_regression


def _digits_target():
    from sklearn.datasets import load_digits

    return load_digits().target


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_regression_file_round_trip_with_provenance(tmp_path, suffix) -> None:
    problem = pts.digits_points(kind="regression", n=32, seed=0, classes=pts.ALL_DIGITS).problem()
    assert isinstance(problem, RegressionProblem) and (problem.N, problem.D) == (32, 64)
    out = tmp_path / f"r{suffix}"
    save_regression(problem, out)
    plain = load_regression(out)  # the certify reader: X and y exactly, the record ignored
    assert plain.data_hash() == problem.data_hash()
    back = load_regression_with_provenance(out)
    assert back.provenance["labels"]["rule"] == "the digit's value 0..9 (a real target)"
    ids = back.provenance["selection"]["ids"]
    assert np.array_equal(back.y, _digits_target()[ids].astype(float))


def test_no_provenance_and_the_synth_writer_unchanged(tmp_path) -> None:
    problem = RegressionProblem(np.eye(2, 3), np.array([1.0, -1.0]))
    save_regression(problem, tmp_path / "a.npz")
    problem.save(tmp_path / "b.npz")
    a, b = (np.load(tmp_path / f) for f in ("a.npz", "b.npz"))
    assert sorted(a.files) == sorted(b.files) == ["X", "kind", "y"]
    assert load_regression_with_provenance(tmp_path / "a.npz").provenance is None
