"""Padded twins of a problem and path comparisons, shared by the regularization-path tests
(docs/theory.md section 1.3: padding takes part in nothing, so a padded twin has the same path)."""

from __future__ import annotations

import numpy as np
import pytest

from certify import AttentionProblem

__all__ = ["padded_twin", "assert_same_decay", "assert_same_path", "assert_same_joint_path"]


def padded_twin(problem: AttentionProblem, seed: int) -> AttentionProblem:
    """``problem`` with 1..4 (seeded random) zero padding tokens appended to every example, lengths set."""
    return problem.padded(problem.T + int(np.random.default_rng(seed).integers(1, 5)))


def assert_same_decay(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        assert b[key] == (
            value if isinstance(value, bool) else pytest.approx(value, rel=1e-12, abs=0)
        ), key


def assert_same_path(a, b) -> None:
    """Same radii, W(R) within 1e-12 relative, same tokens, Bregman values and decay."""
    assert [r.R for r in a.results] == [r.R for r in b.results]
    for ra, rb in zip(a.results, b.results):
        assert np.max(np.abs(ra.W - rb.W)) <= 1e-12 * np.max(np.abs(ra.W))
        assert ra.selected == rb.selected and ra.winner == rb.winner
        assert rb.bregman_to_svm == pytest.approx(ra.bregman_to_svm, rel=1e-12, abs=0)
    assert_same_decay(a.decay(), b.decay())


def assert_same_joint_path(a, b) -> None:
    """`assert_same_path` for joint paths: also r, v(R), D_v and the Theorem 31 quantities."""
    assert [r.r for r in a.results] == [r.r for r in b.results]
    assert_same_path(a, b)
    for ra, rb in zip(a.results, b.results):
        assert np.max(np.abs(ra.v - rb.v)) <= 1e-12 * np.max(np.abs(ra.v))
        assert rb.bregman_v_to_svm == pytest.approx(ra.bregman_v_to_svm, rel=1e-12, abs=0)
    assert a.quantities == b.quantities  # Theorem 31 quantities over valid tokens
