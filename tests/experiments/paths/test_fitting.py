"""Numeric helpers of the fits (experiments/paths/fitting.py); the fits themselves are in test_rates."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.paths import fitting, rates
from experiments.paths.fitting import clean_json, fit_line, tail_mask


def test_rates_reexports_the_same_helpers() -> None:
    for name in fitting.__all__:
        assert getattr(rates, name) is getattr(fitting, name)


def test_tail_mask_is_the_last_two_decades_by_default() -> None:
    k = np.arange(0, 10001)
    m = tail_mask(k)
    assert k[m][0] == 100 and k[m][-1] == 10000
    assert tail_mask(np.arange(0, 10), min_step=3)[:3].sum() == 0


def test_fit_line_rows_and_a_single_step_is_refused() -> None:
    x = np.array([1.0, 2.0, 3.0])
    c1, c0, rmse = fit_line(x, np.array([[2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]))
    assert np.allclose(c1, [2, 0]) and np.allclose(c0, [0, 1]) and np.allclose(rmse, 0)
    with pytest.raises(MdcertError, match="same step"):
        fit_line(np.ones(3), np.ones((1, 3)))


def test_clean_json_has_no_nan() -> None:
    assert clean_json({"a": (1.0, float("nan")), "b": np.int64(3), "c": [np.float64("inf")]}) == {
        "a": [1.0, None],
        "b": 3,
        "c": [None],
    }
