"""certify.represent: coinciding attention rows ``l z^T`` (docs/theory.md section 4.3). `primitive`
splits an integer vector into content and primitive part; `fingerprint_representatives` maps each
row to the first row exactly equal to it, checked against the dense integer rows."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from certify import represent
from certify.exact import DyadicArray
from certify.ops import ExactOps
from certify.problem import ConstraintSystem
from certify.represent import PRIME, fingerprint_representatives, primitive

BIG = st.integers(-(2**80), 2**80)


@settings(deadline=None, max_examples=100)
@given(v=st.lists(st.one_of(st.integers(-6, 6), BIG), max_size=6))
@example(v=[])
@example(v=[0, 0, 0])
@example(v=[0, -4, 6])
@example(v=[2**70, -(2**71), 0])
def test_primitive_splits_content_and_primitive_part(v):
    v0, c = primitive(v)
    assert len(v0) == len(v) and all(isinstance(k, int) for k in v0)
    if not any(v):
        assert (v0, c) == (tuple(v), 0)
        return
    assert [c * k for k in v0] == v
    assert math.gcd(*v0) == 1
    assert next(k for k in v0 if k) > 0  # the sign sits in the content


@settings(deadline=None, max_examples=50)
@given(
    v=st.lists(st.integers(-50, 50), min_size=1, max_size=5).filter(any),
    k=st.integers(-(2**70), 2**70).filter(bool),
)
def test_primitive_part_is_scale_invariant(v, k):
    v0, c = primitive(v)
    assert primitive([k * x for x in v]) == (v0, k * c)


@pytest.mark.parametrize(
    "v", [np.array([6, -9, 0]), np.array([6, -9, 0], dtype=object), (6, -9, 0)]
)
def test_primitive_takes_numpy_rows(v):
    assert primitive(v) == ((2, -3, 0), 3)


def _ops(L, Zu, ex) -> SimpleNamespace:
    """What `fingerprint_representatives` reads of an `ExactOps`: L, Zu, ex and N."""
    return SimpleNamespace(L=L, Zu=Zu, ex=np.asarray(ex, dtype=np.int64), N=len(L))


def _first_equal(L, Zu, ex) -> list[int]:
    """The representatives by definition: the first row whose dense integer matrix is equal."""
    dense = [tuple(int(a) * int(b) for a in L[r] for b in Zu[ex[r]]) for r in range(len(L))]
    first: dict = {}
    return [first.setdefault(row, r) for r, row in enumerate(dense)]


_VEC = st.lists(st.integers(-2, 2), min_size=3, max_size=3).filter(any)


@st.composite
def _systems(draw):
    """Rows ``c_r l_b z_e^T`` from a few base factors and small scales: many rows coincide, also
    with a factor moved between l and z (``(2 l)(3 z)^T = (3 l)(2 z)^T``). No zero row."""
    base_l = draw(st.lists(_VEC, min_size=1, max_size=2))
    base_z = draw(st.lists(_VEC, min_size=1, max_size=2))
    scales = st.sampled_from([1, 2, 3, -1, -2, 6])
    n = draw(st.integers(1, 4))
    Zu = [[draw(scales) * k for k in draw(st.sampled_from(base_z))] for _ in range(n)]
    ex = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=12)))
    L = [[draw(scales) * k for k in draw(st.sampled_from(base_l))] for _ in ex]
    shift = draw(st.sampled_from([0, 70]))  # 70: beyond int64 (object rows)
    dtype = object if shift else np.int64
    L = np.array([[k << shift for k in row] for row in L], dtype=dtype)
    Zu = np.array([[k << shift for k in row] for row in Zu], dtype=dtype)
    return L, Zu, ex


@settings(deadline=None, max_examples=80)
@given(system=_systems())
@example(  # rows (0,2) and (1,2): (2 l)(z)^T and (l)(2 z)^T
    system=(
        np.array([[2, 0, 2], [1, 1, 0], [1, 0, 1]]),
        np.array([[1, -1, 0], [2, -2, 0]]),
        [0, 0, 1],
    )
)
@example(  # equal up to sign moved between l and z
    system=(np.array([[1, 2, 0], [-1, -2, 0]]), np.array([[0, 1, 1], [0, -1, -1]]), [0, 1])
)
def test_fingerprint_representatives_are_the_first_equal_rows(system):
    L, Zu, ex = system
    rep = fingerprint_representatives(_ops(L, Zu, ex))
    assert rep.dtype == np.int64 and rep.tolist() == _first_equal(L, Zu, ex)


def test_fingerprint_collisions_are_resolved_exactly():
    """``(1, PRIME)`` and ``(1, 0)`` share their residues modulo the prime: only the exact
    comparison tells them apart; ``(1, PRIME)`` twice still coincides."""
    L = np.array([[1, PRIME, 0], [1, 0, 0], [1, PRIME, 0], [2, 0, 0]], dtype=np.int64)
    Zu = np.array([[1, 1, 1]], dtype=np.int64)
    rep = fingerprint_representatives(_ops(L, Zu, [0, 0, 0, 0]))
    assert rep.tolist() == [0, 1, 0, 3]


@pytest.mark.parametrize(
    "L, Zu, refused",
    [
        ([[PRIME, 1]], [[1, 1]], True),  # first entry of l divisible by the prime
        ([[0, -2 * PRIME]], [[1, 1]], True),  # the first nonzero entry counts
        ([[1, 1]], [[PRIME * 3, 0]], True),  # first entry of z
        ([[1, PRIME]], [[1, PRIME]], False),  # a later entry: a fingerprint collision at most
        ([[0, 0]], [[1, 1]], False),  # a zero row has no first entry
    ],
)
def test_fingerprint_refuses_a_first_entry_divisible_by_the_prime(L, Zu, refused):
    L, Zu = np.array(L, dtype=object) << 3, np.array(Zu, dtype=object)
    rep = fingerprint_representatives(_ops(L, Zu, [0] * len(L)))
    assert (rep is None) == refused


def test_zero_rows_of_different_examples_stay_apart():
    """The documented exception (`certify.ops.ExactOps.representatives`): a zero row ``0 z^T`` is
    matched only within its example, not with a zero row of another z. Harmless: a zero row
    makes A w >= 1 infeasible, and the solve refuses it before any of this runs."""
    L = np.array([[0, 0], [1, 2], [0, 0]], dtype=np.int64)
    Zu = np.array([[1, 1], [2, 3]], dtype=np.int64)
    assert fingerprint_representatives(_ops(L, Zu, [0, 0, 1])).tolist() == [0, 1, 2]


def _system(n: int = 6, k: int = 4, d: int = 3, seed: int = 0) -> ConstraintSystem:
    """Attention rows with coinciding rows inside and across examples (a factor of 3 moved)."""
    rng = np.random.default_rng(seed)
    Zu = rng.integers(-3, 4, size=(n, d)).astype(object) << 70
    Zu[:, 0] = 2 << 70
    Zu[1] = 3 * Zu[0]
    L = rng.integers(-2, 3, size=(n * k, d)).astype(object) << 70
    L[:, 0] = 1 << 70  # no zero row
    L[k + 1] = L[0]  # row (1, 1) = l (3 z_0)^T
    L[0] = 3 * L[0]  # row (0, 0) = (3 l) z_0^T: the same
    L[2] = L[1]  # a duplicate inside example 0
    index = tuple((i, t) for i in range(n) for t in range(k))
    R = np.repeat(Zu, k, axis=0)
    return ConstraintSystem("attention", index, DyadicArray(L, -70), DyadicArray(R, -70), d)


@pytest.mark.parametrize("threshold, fingerprinted", [(24, False), (23, True), (0, True)])
def test_fingerprint_rows_threshold(monkeypatch, threshold, fingerprinted):
    """`ExactOps.representatives` takes the fingerprints exactly above ``FINGERPRINT_ROWS`` rows
    (a stand-in marks the path) and gets the same groups either way."""
    exact = ExactOps(_system()).representatives()
    L, Zu = _system().left.ints, _system().right.ints[::4]
    assert exact.tolist() == _first_equal(L, Zu, np.repeat(np.arange(6), 4))
    assert exact[2] == 1 and exact[4 + 1] == 0
    monkeypatch.setattr(represent, "FINGERPRINT_ROWS", threshold)
    assert ExactOps(_system()).representatives().tolist() == exact.tolist()
    marker = np.full(24, 7, dtype=np.int64)
    monkeypatch.setattr(represent, "fingerprint_representatives", lambda ops: marker)
    got = ExactOps(_system()).representatives()
    assert got.tolist() == (marker.tolist() if fingerprinted else exact.tolist())
    monkeypatch.setattr(represent, "fingerprint_representatives", lambda ops: None)
    assert ExactOps(_system()).representatives().tolist() == exact.tolist()  # refused: exact keys
