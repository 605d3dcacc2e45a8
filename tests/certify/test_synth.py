"""The seeded synthetic generator (paper section 6 setup)."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from certify.synth import synthetic_problem


def test_defaults_are_paper_size_and_seeded() -> None:
    a, b, c = synthetic_problem(seed=7), synthetic_problem(seed=7), synthetic_problem(seed=8)
    assert (a.n, a.T, a.d) == (6, 8, 10)
    assert a.data_hash() == b.data_hash() != c.data_hash()


@pytest.mark.parametrize(("kwargs", "pattern"), [(dict(n=0), "invalid n"), (dict(T=1), "invalid T"),
                                                  (dict(d=2.5), "invalid d")])
def test_bad_sizes(kwargs, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        synthetic_problem(**kwargs)


def test_min_T_keeps_the_full_problems_tokens_and_zeroes_the_rest() -> None:
    full, var = synthetic_problem(seed=5), synthetic_problem(seed=5, min_T=2)
    assert synthetic_problem(seed=5, min_T=8).lengths is None           # all of length T: the full problem
    assert synthetic_problem(seed=5, min_T=8).data_hash() == full.data_hash()
    L = var.valid_lengths
    assert L.min() >= 2 and L.max() <= 8 and var.lengths is not None
    for i in range(var.n):
        assert (var.X[i, :L[i]] == full.X[i, :L[i]]).all() and not var.X[i, L[i]:].any()
    for bad in (1, 9, 2.5):
        with pytest.raises(MdcertError, match="invalid min_T"):
            synthetic_problem(seed=5, min_T=bad)
