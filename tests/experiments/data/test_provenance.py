"""experiments/data/provenance.py: the DataProblem bundle and its record."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.data.provenance import PROVENANCE_FORMAT, DataProblem, mdcert_version


def _data(**kw) -> DataProblem:
    X = np.zeros((2, 3, 2))
    X[:, 0, 0], X[:, 1, 1], X[0, 2] = 1.0, 1.0, 0.5
    args = dict(
        X=X,
        y=np.array([1.0, -1.0]),
        z=np.ones((2, 2)),
        v=np.array([1.0, 0.0]),
        lengths=np.array([3, 2]),
        provenance={"format": PROVENANCE_FORMAT, "n": 2},
    )
    args.update(kw)
    return DataProblem(**args)


def test_problem_carries_lengths_and_provenance() -> None:
    problem = _data().problem()
    assert problem.valid_lengths.tolist() == [3, 2] and problem.provenance == {
        "format": PROVENANCE_FORMAT,
        "n": 2,
    }
    assert mdcert_version() != ""


def test_record_must_serialize_and_lengths_must_fit() -> None:
    with pytest.raises(TypeError):
        _data(provenance={"n": np.int64(2)})
    with pytest.raises(MdcertError):
        _data(lengths=np.array([1, 2])).problem()
