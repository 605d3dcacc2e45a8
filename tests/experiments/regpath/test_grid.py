"""Radius grids of the regularization paths (experiments/regpath_grid.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from certify import MdcertError
from experiments.regpath.grid import geometric_radii, parse_radii


@pytest.mark.parametrize(
    "text, match",
    [
        ("0:10:3", "positive"),
        ("-1:10:3", "positive"),
        ("10:1:3", "START .* > STOP"),
        ("1:10:0", "COUNT must be >= 1"),
        ("1:10:-2", "COUNT must be >= 1"),
        ("1:10", "START:STOP:COUNT"),
        ("abc", "START:STOP:COUNT"),
        ("1:10:2.5", "COUNT must be an integer"),
        ("a:10:3", "must be numbers"),
        ("1:inf:3", "finite and positive"),
        ("1:nan:3", "finite and positive"),
        ("5:6:1", "COUNT 1 needs START == STOP"),
        ("", "START:STOP:COUNT"),
    ],
)
def test_bad_radii_are_clear_errors(text, match) -> None:
    with pytest.raises(MdcertError, match=match):
        parse_radii(text)


def test_radii_are_geometric_with_exact_ends() -> None:
    assert geometric_radii(1, 100, 3).tolist() == pytest.approx([1.0, 10.0, 100.0])
    with pytest.raises(MdcertError, match="COUNT must be an integer"):
        geometric_radii(1, 10, 2.0)
    r = parse_radii("10:1000:9")
    assert r[0] == 10.0 and r[-1] == 1000.0 and r.size == 9
    assert np.allclose(np.diff(np.log(r)), math.log(100) / 8)
    assert parse_radii(" 7 : 7 : 1 ").tolist() == [7.0]
