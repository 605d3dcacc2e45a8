"""Kit strategies (experiments/testing/strategies.py): exact exponents per regime, finite mirror maps."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from certify.problem import AttentionProblem
from experiments.optim import mirror
from experiments.testing.strategies import (
    REGIME_LABELS,
    REGIMES,
    attention_problems,
    bounded_tensors,
    exponents,
    p_text,
    regime_of,
    safe_bound,
    safe_lower,
)


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(REGIMES).flatmap(lambda r: exponents(regime=r).map(lambda p: (r, p))))
def test_each_regime_draws_its_own_exponents(case):
    regime, p = case
    assert isinstance(p, Fraction) and regime_of(p) == regime
    assert Fraction(repr(float(p))) == p  # p read back from its float is the same p


@settings(deadline=None, max_examples=50)
@given(exponents())
def test_all_regimes_are_in_range(p):
    assert Fraction(101, 100) <= p <= 8


def test_regime_boundaries_and_labels():
    assert [regime_of(x) for x in ("1.01", "1.1", "1.11", "1.99", "2", "2.01")] == [
        "near_one",
        "near_one",
        "below_two",
        "below_two",
        "two",
        "above_two",
    ]
    assert set(REGIME_LABELS) == set(REGIMES)
    assert [p_text(x) for x in ("1.01", "3", "7/4", "5/3")] == ["1.01", "3", "1.75", "5/3"]
    with pytest.raises(ValueError, match="unknown regime"):
        exponents(regime="p<1")
    with pytest.raises(ValueError, match="need 1 < min_value"):
        exponents(min_value=1)


@settings(deadline=None, max_examples=40)
@given(
    st.tuples(exponents(), st.sampled_from([torch.float32, torch.float64])).flatmap(
        lambda t: bounded_tensors(p=t[0], dtype=t[1], max_abs=1e30).map(lambda W: (t[0], W))
    )
)
def test_bounded_tensors_keep_maps_finite_and_normal(case):
    p, W = case
    assert torch.isfinite(W).all()
    m = mirror.mirror_map(W, p)
    assert torch.isfinite(m).all() and torch.isfinite(mirror.inverse_mirror_map(W, p)).all()
    assert bool(((m == 0) == (W == 0)).all())  # no non-zero entry underflows in the mirror map


def test_safe_bounds():
    assert safe_bound(Fraction(2), torch.float64) == pytest.approx(
        torch.finfo(torch.float64).max / 4
    )
    assert safe_bound(Fraction(3), torch.float32) == pytest.approx(
        torch.finfo(torch.float32).max ** 0.5 / 4
    )
    assert (
        safe_lower(Fraction(3, 2), torch.float32) == 0.0
        and safe_lower(Fraction(4), torch.float32) > 1e-13
    )
    with pytest.raises(ValueError, match="float32 and float64"):
        bounded_tensors(dtype=torch.float16)


@settings(deadline=None, max_examples=20)
@given(attention_problems())
def test_attention_problems_are_valid(problem):
    assert isinstance(problem, AttentionProblem) and problem.T >= 2
    assert set(problem.y.tolist()) <= {-1.0, 1.0}
