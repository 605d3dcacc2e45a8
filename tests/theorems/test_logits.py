"""theorems.logits: exact logits, the softmax over valid tokens, and the padding equivalence of every
predicate (a padded twin gives the same verdicts and the same enclosures; docs/theory.md section 1.3)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb

from certify import AttentionProblem, synthetic_problem
from theorems.catalogue import check_theorem
from theorems.logits import exact_logits, padding_mask, softmax_balls
from theorems.segment import segment_convexity
from theorems.stepsize import check_steps


def _variable(seed: int = 2) -> AttentionProblem:
    base = synthetic_problem(n=4, T=5, d=3, seed=seed)
    L = np.array([5, 3, 4, 2])
    X = np.where(np.arange(5)[None, :, None] < L[:, None, None], base.X, 0.0)
    return AttentionProblem(X, base.y, base.z, base.v, lengths=L)


def _trajectory(d: int, steps: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((d, d))
    return np.cumsum(np.concatenate([W0[None], 0.05 * rng.standard_normal((steps, d, d))]), axis=0)


def test_softmax_balls_gives_padding_exactly_zero_weight() -> None:
    prob = _variable()
    S = exact_logits(prob, _trajectory(3, steps=1))
    sig = softmax_balls(S, padding_mask(prob))
    assert all(s == 0 and s.is_exact() for s in sig[:, ~prob.token_mask].ravel())
    total = sig.sum(axis=-1)
    assert all(t.contains(1) for t in total.ravel())
    full = synthetic_problem(n=2, T=3, d=2, seed=1)
    assert padding_mask(full) is None
    E = np.frompyfunc(lambda x: x.exp(), 1, 1)(exact_logits(full, _trajectory(2, steps=1)))
    ref = E / E.sum(axis=2)[:, :, None]  # the formula before masks: bit for bit
    got = softmax_balls(exact_logits(full, _trajectory(2, steps=1)), None)
    assert all(a.mid() == b.mid() and a.rad() == b.rad() for a, b in zip(ref.ravel(), got.ravel()))
    assert isinstance(got.ravel()[0], arb)


def _reports(report) -> list:
    return [h.to_json() for h in report.hypotheses]


@pytest.mark.parametrize("theorem", ["6", "10"])
@pytest.mark.parametrize("p", ["1.5", "2"])
def test_padded_twin_gives_the_same_verdicts_and_enclosures(theorem, p) -> None:
    traj = _trajectory(3)
    for prob in (_variable(), synthetic_problem(n=4, T=4, d=3, seed=7)):
        twin = prob.padded(prob.T + 3)
        kw = dict(
            p=p, alpha="opt", eta="0.1", trajectory=traj, W0=traj[0], mu="0.5", R="1", segment=True
        )
        a, b = check_theorem(theorem, prob, **kw), check_theorem(theorem, twin, **kw)
        assert a.verdict is b.verdict
        assert _reports(a) == _reports(b)
        assert b.quantities["lengths"] == list(prob.valid_lengths)


def test_masks_matter_for_the_step_and_segment_checks() -> None:
    """The padded problem and the same arrays read with padding as tokens give different step ratios
    (so the equivalence test above can fail)."""
    prob = _variable()
    as_tokens = AttentionProblem(prob.X, prob.y, prob.z, prob.v)
    traj = _trajectory(3)
    twin = prob.padded(8)
    for loss in ("logistic", "exponential"):
        a = check_steps(prob, traj, eta=Fraction(1, 10), p=Fraction(2), loss=loss, prefilter=False)
        b = check_steps(twin, traj, eta=Fraction(1, 10), p=Fraction(2), loss=loss, prefilter=False)
        c = check_steps(
            as_tokens, traj, eta=Fraction(1, 10), p=Fraction(2), loss=loss, prefilter=False
        )
        assert a.ratio_lo == b.ratio_lo and a.ratio_hi == b.ratio_hi
        assert a.ratio_lo != c.ratio_lo
    sa = segment_convexity(prob, traj, Fraction(100), Fraction(2))
    sb = segment_convexity(twin, traj, Fraction(100), Fraction(2))
    assert np.array_equal(sa.status, sb.status) and sa.evaluations == sb.evaluations
