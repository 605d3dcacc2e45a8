"""The log-domain excess loss (experiments/excess_loss.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from experiments.regpath.excess_loss import ExcessLoss


def test_excess_loss_matches_the_model_and_its_gradient() -> None:
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss

    P = synthetic_problem(n=4, T=5, d=3, seed=3)
    obj = ExcessLoss(P.X, P.y, P.z, P.v)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 9)) * 4
    ev = obj.evaluate(W)
    for s in range(3):
        Wt = torch.tensor(W[s].reshape(3, 3), requires_grad=True)
        L = model_loss(
            Wt, torch.tensor(P.v), torch.tensor(P.X), torch.tensor(P.y), torch.tensor(P.z)
        )
        L.backward()
        assert ev["loss"][s] == pytest.approx(L.item(), rel=1e-13)
        E = L.item() - obj.base_loss
        assert math.exp(ev["log_excess"][s]) == pytest.approx(E, rel=1e-8)
        # grad of log E = grad L / E
        assert np.allclose(ev["grad"][s] * E, Wt.grad.numpy().ravel(), rtol=1e-7, atol=1e-14)


def test_log_excess_keeps_resolving_far_below_float_resolution_of_the_loss() -> None:
    # one example, two tokens x1 = e1, x2 = e2, z = e1, v = x1 - x2 (token 0 optimal)
    X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    P = AttentionProblem(X, np.array([1.0]), np.array([[1.0, 0.0]]), np.array([1.0, -1.0]))
    obj = ExcessLoss(P.X, P.y, P.z, P.v)
    # logit gap s_1 - s_2 = W[0,0] - W[1,0]; excess ~ sigmoid(-g) * c * e^{-gap}
    logs = [
        float(obj.evaluate(np.array([[t, 0.0, 0.0, 0.0]]))["log_excess"][0])
        for t in (100.0, 400.0, 800.0)
    ]
    assert np.allclose(np.diff(logs), [-300.0, -400.0], rtol=1e-9)
    assert all(np.isfinite(logs))


# ------------------------------------------------------------------------------ padding (docs/theory.md section 1.3)
def _ragged(seed: int = 2) -> AttentionProblem:
    P = synthetic_problem(n=5, T=6, d=4, seed=seed, min_T=3)
    assert P.lengths is not None and len(set(P.lengths.tolist())) > 1
    return P


def test_padded_excess_loss_is_the_mean_over_the_truncated_examples() -> None:
    """E(W) of a variable-length problem = mean_i E_i(W) of its examples cut to their valid tokens
    (full-length single-example problems, no mask), and so is E * grad log E = grad L."""
    P = _ragged()
    obj = ExcessLoss(P.X, P.y, P.z, P.v, mask=P.token_mask)
    parts = [
        ExcessLoss(P.X[i : i + 1, :k], P.y[i : i + 1], P.z[i : i + 1], P.v)
        for i, k in enumerate(P.valid_lengths)
    ]
    W = np.random.default_rng(1).standard_normal((4, 16)) * 3
    ev = obj.evaluate(W)
    evs = [o.evaluate(W) for o in parts]
    E = np.mean([np.exp(e["log_excess"]) for e in evs], axis=0)
    G = np.mean([np.exp(e["log_excess"])[:, None] * e["grad"] for e in evs], axis=0)
    np.testing.assert_allclose(np.exp(ev["log_excess"]), E, rtol=1e-13)
    np.testing.assert_allclose(
        np.exp(ev["log_excess"])[:, None] * ev["grad"], G, rtol=1e-11, atol=1e-15 * np.abs(G).max()
    )
    np.testing.assert_allclose(ev["loss"], np.mean([e["loss"] for e in evs], axis=0), rtol=1e-14)
    assert np.all(ev["selected"] < P.valid_lengths[None, :])
    # the same data read as full length (its zero rows as tokens) is another objective
    leaky = ExcessLoss(P.X, P.y, P.z, P.v).evaluate(W)
    assert np.all(np.abs(leaky["loss"] - ev["loss"]) > 1e-6)


def test_reference_tokens_are_the_best_valid_tokens_even_when_padding_would_score_higher() -> None:
    # every valid token scores below 0, the (zero) padding token would score 0
    X = np.array([[[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]], [[-1.0, 0.2], [-0.3, 1.0], [0.4, -0.1]]])
    P = AttentionProblem(
        X,
        np.array([-1.0, 1.0]),
        np.array([[1.0, 0.5], [0.2, 1.0]]),
        np.array([1.0, 0.2]),
        lengths=[2, 3],
    )
    assert P.token_scores()[0].tolist()[:2] == [-1.0, -0.6]
    obj = ExcessLoss(P.X, P.y, P.z, P.v, mask=P.token_mask)
    assert tuple(obj.ref) == P.optimal_indices().indices == (1, 2)
    assert obj.base_loss == pytest.approx(
        float(np.mean(np.logaddexp(0.0, -np.array([-0.6, 0.4 - 0.02])))), rel=1e-15
    )
    assert tuple(ExcessLoss(P.X, P.y, P.z, P.v).ref)[0] == 2  # unmasked, the padding would win


def test_trailing_padding_is_dropped_so_a_padded_twin_has_the_same_arithmetic() -> None:
    P = synthetic_problem(n=4, T=5, d=3, seed=3)
    Q = P.padded(9)
    a, b = ExcessLoss(P.X, P.y, P.z, P.v), ExcessLoss(Q.X, Q.y, Q.z, Q.v, mask=Q.token_mask)
    assert b.mask is None and b.T == P.T
    W = np.random.default_rng(2).standard_normal((3, 9))
    ea, eb = a.evaluate(W), b.evaluate(W)
    for key in ("log_excess", "grad", "loss", "selected"):
        assert ea[key].tobytes() == eb[key].tobytes(), key
    R = _ragged()
    c = ExcessLoss(R.X, R.y, R.z, R.v, mask=R.token_mask)
    Rp = R.padded(R.T + 3)
    d = ExcessLoss(Rp.X, Rp.y, Rp.z, Rp.v, mask=Rp.token_mask)
    assert c.mask is not None and np.array_equal(c.mask, d.mask)
    W = np.random.default_rng(3).standard_normal((2, 16))
    assert c.evaluate(W)["grad"].tobytes() == d.evaluate(W)["grad"].tobytes()


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (np.ones((5, 6), dtype=np.int64), r"bool array of shape \(5, 6\)"),
        (np.ones((5, 5), dtype=bool), r"bool array of shape \(5, 6\)"),
        (np.eye(5, 6, dtype=bool), "fewer than 2 valid tokens"),
    ],
)
def test_bad_token_masks_are_refused(mask, match) -> None:
    from certify import MdcertError

    P = _ragged()
    with pytest.raises(MdcertError, match=match):
        ExcessLoss(P.X, P.y, P.z, P.v, mask=mask)
