"""Log-domain joint objective and its scaled gradients (experiments/joint_objective.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from certify import synthetic_problem
from experiments.regpath.joint import joint_example
from experiments.regpath.joint_objective import JointObjective


def test_scaled_gradients_are_positive_multiples_of_autograd() -> None:
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss

    P = synthetic_problem(n=3, T=4, d=3, seed=5)
    obj = JointObjective(P.X, P.y, P.z)
    rng = np.random.default_rng(0)
    for _ in range(3):
        W, v = rng.standard_normal((3, 3)) * 2, rng.standard_normal(3) * 2
        Wt, vt = torch.tensor(W, requires_grad=True), torch.tensor(v, requires_grad=True)
        L = model_loss(Wt, vt, torch.tensor(P.X), torch.tensor(P.y), torch.tensor(P.z))
        L.backward()
        GW, Gv = obj.scaled_gradients(W, v)
        for mine, ref in ((GW, Wt.grad.numpy()), (Gv, vt.grad.numpy())):
            assert np.allclose(mine / np.linalg.norm(mine), ref / np.linalg.norm(ref), atol=1e-13)
        assert obj.log_loss(W, v) == pytest.approx(math.log(L.item()), rel=1e-13)


def test_scaled_gradient_survives_saturation_and_is_exactly_zero_at_v_zero() -> None:
    J = joint_example()
    obj = JointObjective(J.X, J.y, J.z)
    GW, Gv = obj.scaled_gradients(np.zeros((2, 2)), np.zeros(2))
    assert not np.any(GW) and np.any(Gv)
    big = np.array([[300.0, -50.0], [20.0, 400.0]])
    GW, Gv = obj.scaled_gradients(big, np.array([40.0, 60.0]))
    assert np.all(np.isfinite(GW)) and np.any(GW) and np.any(Gv)


def _mp_gradients(J, W, v, digits=400):
    """grad_W L and grad_v L in mpmath (the logistic loss), as float directions. The plain formula cancels
    (gamma_a - u is ~1e-152 at the saturated point), so it needs ~400 digits there."""
    import mpmath

    with mpmath.workdps(digits):
        X = [[[mpmath.mpf(float(a)) for a in row] for row in ex] for ex in J.X]
        z = [[mpmath.mpf(float(a)) for a in row] for row in J.z]
        y = [mpmath.mpf(float(a)) for a in J.y]
        Wm = [[mpmath.mpf(float(a)) for a in row] for row in W]
        vm = [mpmath.mpf(float(a)) for a in v]
        d = len(vm)
        GW = [[mpmath.mpf(0)] * d for _ in range(d)]
        Gv = [mpmath.mpf(0)] * d
        for i, ex in enumerate(X):
            s = [sum(x[j] * Wm[j][k] * z[i][k] for j in range(d) for k in range(d)) for x in ex]
            mx = max(s)
            e = [mpmath.exp(si - mx) for si in s]
            sm = [ei / sum(e) for ei in e]
            gam = [y[i] * sum(x[k] * vm[k] for k in range(d)) for x in ex]
            u = sum(a * b for a, b in zip(sm, gam))
            dl = -1 / (1 + mpmath.exp(u)) / len(X)
            for t, x in enumerate(ex):
                for j in range(d):
                    Gv[j] += dl * y[i] * sm[t] * x[j]
                    for k in range(d):
                        GW[j][k] += dl * sm[t] * (gam[t] - u) * x[j] * z[i][k]
        flat = [a for row in GW for a in row]
        nw = mpmath.sqrt(sum(a * a for a in flat))
        nv = mpmath.sqrt(sum(a * a for a in Gv))
        return np.array([float(a / nw) for a in flat]), np.array([float(a / nv) for a in Gv])


def test_scaled_gradients_match_high_precision_at_saturation() -> None:
    J = joint_example()
    obj = JointObjective(J.X, J.y, J.z)
    for W, v in (
        (np.array([[-2.5, -1.5], [-2.8, 7.5]]), np.array([-0.01, 0.6])),
        (np.array([[-25.0, -15.0], [-28.0, 75.0]]), np.array([-3.0, 40.0])),
    ):
        GW, Gv = obj.scaled_gradients(W, v)
        gw, gv = _mp_gradients(J, W, v)
        assert np.allclose(GW.ravel() / np.linalg.norm(GW), gw, atol=1e-13)
        assert np.allclose(Gv / np.linalg.norm(Gv), gv, atol=1e-13)


def test_padded_joint_objective_matches_masked_autograd_and_ignores_padding() -> None:
    """docs/theory.md section 1.3: padding has softmax weight 0, in the loss and in both gradients."""
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss
    from experiments.model import problem_tensors

    P = synthetic_problem(n=4, T=5, d=3, seed=2, min_T=2)
    assert P.lengths is not None
    obj = JointObjective(P.X, P.y, P.z, mask=P.token_mask)
    data = problem_tensors(P)
    rng = np.random.default_rng(0)
    for _ in range(3):
        W, v = rng.standard_normal((3, 3)) * 2, rng.standard_normal(3) * 2
        lsm = obj.log_softmax(W)
        assert np.all(lsm[~obj.mask] == -np.inf) and np.all(np.isfinite(lsm[obj.mask]))
        Wt, vt = torch.tensor(W, requires_grad=True), torch.tensor(v, requires_grad=True)
        L = model_loss(Wt, vt, data.X, data.y, data.z, mask=data.mask)
        L.backward()
        GW, Gv = obj.scaled_gradients(W, v)
        for mine, ref in ((GW, Wt.grad.numpy()), (Gv, vt.grad.numpy())):
            assert np.allclose(mine / np.linalg.norm(mine), ref / np.linalg.norm(ref), atol=1e-13)
        assert obj.log_loss(W, v) == pytest.approx(math.log(L.item()), rel=1e-13)
        feats = [
            P.y[i]
            * np.exp(
                JointObjective(P.X[i : i + 1, :k], P.y[i : i + 1], P.z[i : i + 1]).log_softmax(W)
            )[0]
            @ P.X[i, :k]
            for i, k in enumerate(P.valid_lengths)
        ]
        np.testing.assert_allclose(obj.features(W), np.array(feats), rtol=1e-14, atol=1e-15)
    Q = P.padded(P.T + 2)  # more padding: the same arithmetic
    twin = JointObjective(Q.X, Q.y, Q.z, mask=Q.token_mask)
    for a, b in zip(obj.scaled_gradients(W, v), twin.scaled_gradients(W, v)):
        assert a.tobytes() == b.tobytes()
