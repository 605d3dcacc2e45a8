"""certify.regression.deltakkt: proven delta-KKT bounds of a trained diagonal network."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import regression_problem
from certify.regression.closed_form import block_l32_solution
from certify.regression.deltakkt import delta_kkt


def _weights(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sqrt(np.maximum(beta, 0)), np.sqrt(np.maximum(-beta, 0))


def test_the_l32_minimizer_with_vanishing_v_is_a_zero_delta_point() -> None:
    """With v = 0 (c = 0), E is (2/3)||beta||_{3/2}^{3/2}: its minimizer on block data is the closed form,
    where grad E lies in the row space of X, so delta is zero up to the rounding of the weights."""
    pr = regression_problem("block", N=4, seed=2)
    exact = block_l32_solution(pr)
    beta = np.array([float(exact.entry(i)) for i in range(pr.D)])
    wp, wm = _weights(beta)
    d = delta_kkt(pr, wp, wm)
    assert d.residual_l2_upper < Fraction(1, 10**14)
    assert d.delta_upper < Fraction(1, 10**7) and d.delta_f_upper < Fraction(1, 10**7)
    assert d.distance_to_e_opt_upper < Fraction(1, 10**5)


@pytest.mark.parametrize("seed", [0, 1])
def test_proven_bound_is_within_rounding_of_the_float_value(seed) -> None:
    rng = np.random.default_rng(seed)
    pr = regression_problem("gaussian", N=3, D=8, seed=seed)
    wp, wm = rng.uniform(0.01, 1, 8), rng.uniform(0.01, 1, 8)
    d = delta_kkt(pr, wp, wm)
    assert float(d.delta_upper) == pytest.approx(d.delta_float, rel=1e-9)
    # off the affine set: the projection moves beta, and the distance bound is finite and positive
    assert d.residual_l2_upper > 0 and d.projection_distance_upper > 0
    assert d.distance_to_e_opt_upper is not None and d.distance_to_e_opt_upper > 0


def test_a_zero_coordinate_uses_the_nearest_subgradient() -> None:
    pr = regression_problem("block", N=2, seed=0)
    wp = np.array([0.5, 0.3, 0.2, 0.2])
    wm = np.array([0.1, 0.3, 0.4, 0.2])  # coordinates 1 and 3 have beta = 0 and c = 0.09, 0.04
    d = delta_kkt(pr, wp, wm)
    assert d.delta_upper <= Fraction(d.delta_float) * (1 + Fraction(1, 10**9)) + Fraction(1, 10**12)


def test_bad_weights_are_refused_in_one_line() -> None:
    pr = regression_problem("block", N=2, seed=0)
    with pytest.raises(MdcertError, match="D = 4 entries"):
        delta_kkt(pr, np.ones(3), np.ones(4))
    with pytest.raises(MdcertError, match=r"w_plus entry \(1,\) is not finite"):
        delta_kkt(pr, np.array([1.0, np.inf, 1.0, 1.0]), np.ones(4))
