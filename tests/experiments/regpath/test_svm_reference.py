"""Certified reference directions and the directional Bregman divergence (experiments/svm_reference.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify import MdcertError
from experiments.regpath.svm_reference import bregman_directional


def test_bregman_directional_is_scale_free_and_zero_on_equal_directions() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(6), rng.standard_normal(6)
    p = Fraction(7, 4)
    assert bregman_directional(a, 3.0 * a, p) == pytest.approx(0.0, abs=1e-30)
    assert bregman_directional(a, b, p) == pytest.approx(
        bregman_directional(2 * a, 5 * b, p), rel=1e-12
    )
    assert bregman_directional(a, b, p) > 0
    with pytest.raises(MdcertError, match="zero"):
        bregman_directional(a, np.zeros(6), p)
