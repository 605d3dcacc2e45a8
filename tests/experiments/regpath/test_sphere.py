"""The l_p-ball gap and the sphere solver (experiments/sphere.py); the solver against the closed-form
two-token SVM is tested with the path in test_regpath.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from experiments.regpath.sphere import ball_gap, lp_norm_rows


def test_ball_gap_is_zero_at_the_linear_minimizer_and_one_at_the_centre() -> None:
    rng = np.random.default_rng(1)
    for p in (Fraction(3, 2), Fraction(2), Fraction(3)):
        q = float(p / (p - 1))
        G = rng.standard_normal(7)
        W = -np.sign(G) * np.abs(G) ** (q - 1)
        W *= 5.0 / lp_norm_rows(W[None, :], float(p))[0]
        rel, ab = ball_gap(G, W, 5.0, p)
        assert rel < 1e-14 and ab < 1e-12
        assert ball_gap(G, np.zeros(7), 5.0, p)[0] == pytest.approx(1.0)
        assert ball_gap(G, -W, 5.0, p)[0] == pytest.approx(2.0)
        assert ball_gap(np.zeros(7), W, 5.0, p) == (0.0, 0.0)
