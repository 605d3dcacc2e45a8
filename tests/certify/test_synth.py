"""The seeded synthetic generator (paper section 6 setup)."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from certify.synth import synthetic_problem


def test_defaults_are_paper_size_and_seeded() -> None:
    a, b, c = synthetic_problem(seed=7), synthetic_problem(seed=7), synthetic_problem(seed=8)
    assert (a.n, a.T, a.d) == (6, 8, 10)
    assert a.data_hash() == b.data_hash() != c.data_hash()


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [(dict(n=0), "invalid n"), (dict(T=1), "invalid T"), (dict(d=2.5), "invalid d")],
)
def test_bad_sizes(kwargs, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        synthetic_problem(**kwargs)


def test_min_T_keeps_the_full_problems_tokens_and_zeroes_the_rest() -> None:
    full, var = synthetic_problem(seed=5), synthetic_problem(seed=5, min_T=2)
    assert synthetic_problem(seed=5, min_T=8).lengths is None  # all of length T: the full problem
    assert synthetic_problem(seed=5, min_T=8).data_hash() == full.data_hash()
    L = var.valid_lengths
    assert L.min() >= 2 and L.max() <= 8 and var.lengths is not None
    for i in range(var.n):
        assert (var.X[i, : L[i]] == full.X[i, : L[i]]).all() and not var.X[i, L[i] :].any()
    for bad in (1, 9, 2.5):
        with pytest.raises(MdcertError, match="invalid min_T"):
            synthetic_problem(seed=5, min_T=bad)


def test_planted_problem_is_feasible_by_construction() -> None:
    from fractions import Fraction

    import numpy as np

    from certify.exact import dyadic
    from certify.ops import ExactOps
    from certify.synth import planted_problem

    pr = planted_problem(n=40, T=6, d=5, seed=3, margin=0.5)
    assert pr.optimal_indices().unique and tuple(pr.alpha) == pr.optimal_indices().indices
    assert planted_problem(n=40, T=6, d=5, seed=3, margin=0.5).data_hash() == pr.data_hash()
    # the planted W* / margin satisfies every constraint, checked exactly
    rng = np.random.default_rng([3, 1])
    G = rng.standard_normal((5, 5))
    Ws = G / np.linalg.norm(G) * np.sqrt(5) / 0.5
    cs = pr.attention_constraints()
    dw = dyadic(Ws.ravel())
    Aw = ExactOps(cs).matvec([int(k) for k in dw.ints])
    assert min(Aw) * Fraction(2) ** (cs.left.exp + cs.right.exp + dw.exp) >= 1


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (dict(n=5, T=4, d=1), "d >= 2"),
        (dict(n=5, T=4, d=3, margin=0), "margin"),
        (dict(n=True, T=4, d=3), "invalid n"),
    ],
)
def test_planted_bad_arguments(kwargs, pattern) -> None:
    from certify.synth import planted_problem

    with pytest.raises(MdcertError, match=pattern):
        planted_problem(**kwargs)
