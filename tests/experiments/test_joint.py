"""Joint (W, v) regularization paths and the joint mirror-descent path (experiments/joint.py, Theorem 31)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import MdcertError, synthetic_problem
from experiments.joint import (
    JointObjective,
    joint_example,
    joint_md_path,
    joint_regularization_path,
    parse_radius_function,
    theorem31_quantities,
)
from experiments.regpath import lp_norm_rows, reference_direction


# ------------------------------------------------------------------------------ r = f(R)
@pytest.mark.parametrize(
    "text, R, expected",
    [("R", 7.0, 7.0), ("sqrt(R)", 16.0, 4.0), ("2*log(R)+1", math.e, 3.0), ("R^2/10", 10.0, 10.0),
     ("R**0.5 * pi", 4.0, 2 * math.pi), ("-(-R)", 3.0, 3.0), ("ln(R) + log10(R) + log2(R) + exp(0) + abs(-1)", 1.0, 2.0)],
)
def test_radius_function_evaluates_whitelisted_expressions(text, R, expected) -> None:
    assert parse_radius_function(text)(R) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, match",
    [("", "empty"), ("   ", "empty"), ("__import__('os')", "function call"), ("R.real", "Attribute"),
     ("lambda: 1", "Lambda"), ("x + R", "name 'x'"), ("R if R else 1", "IfExp"), ("[R]", "List"),
     ("sqrt(R, 2)", "function call"), ("open('f')", "function call"), ("R +", "not an arithmetic"),
     ("'R'", "constant"), ("R // 2", "FloorDiv"), ("True", "constant"), ("R" * 201, "too long")],
)
def test_radius_function_rejects_anything_else(text, match) -> None:
    with pytest.raises(MdcertError, match=match):
        parse_radius_function(text)


@pytest.mark.parametrize("text, R, match", [("-R", 2.0, "finite and positive"), ("log(R)", 1.0, "finite and positive"),
                                            ("1/(R-2)", 2.0, "cannot be evaluated"), ("log(R-5)", 2.0, "cannot be evaluated"),
                                            ("exp(R)", 1000.0, "cannot be evaluated|finite"),
                                            ("(-R)**0.5", 4.0, "not real"), ("sqrt((-R)**0.5)", 4.0, "not real"),
                                            ("-(-R)**0.5", 4.0, "not real")])
def test_radius_function_values_must_be_positive_and_finite(text, R, match) -> None:
    with pytest.raises(MdcertError, match=match):
        parse_radius_function(text)(R)


# ------------------------------------------------------------------------------ gradients
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


# ------------------------------------------------------------------------------ joint mirror descent
@pytest.mark.parametrize("p", ["1.75", "2", "3"])
def test_joint_md_path_on_the_paper_example(p) -> None:
    J = joint_example()
    md = joint_md_path(J, p, steps=120, lr=0.1, records=10)
    # W(0)=v(0)=0: the W gradient is exactly zero at step 1, so only v moves; every later step moves both
    assert md.skipped_W == (1,) and md.skipped_v == ()
    first = md.records[0]
    assert first["step"] == 1 and first["norm_W"] == 0.0 and first["norm_v"] > 0
    norms = [r["norm_W"] for r in md.records]
    assert norms[-1] > norms[1] > 0
    assert md.records[-1]["log_loss"] < md.records[0]["log_loss"]
    assert all(len(r["selected_tokens"]) == 2 for r in md.records)
    js = md.to_json()
    assert js["normalized"] is True and js["skipped_W_steps"] == [1]


def test_joint_md_step_is_the_normalized_mirror_step() -> None:
    """Two steps of the path equal the SPEC section 2 update computed by hand."""
    J = joint_example()
    p = Fraction(3)
    q = float(p / (p - 1))
    obj = JointObjective(J.X, J.y, J.z)
    W, v = np.zeros((2, 2)), np.zeros(2)
    thW, thv = np.zeros((2, 2)), np.zeros(2)
    for _ in range(2):
        GW, Gv = obj.scaled_gradients(W, v)
        for G, name in ((GW, "W"), (Gv, "v")):
            if np.any(G):
                step = 0.1 * G / lp_norm_rows(G.ravel()[None, :], q)[0]
                if name == "W":
                    thW = thW - step
                else:
                    thv = thv - step
        W = np.sign(thW) * np.abs(thW) ** (1 / float(p - 1))
        v = np.sign(thv) * np.abs(thv) ** (1 / float(p - 1))
    md = joint_md_path(J, "3", steps=2, records=2)
    assert md.records[-1]["norm_W"] == pytest.approx(lp_norm_rows(W.ravel()[None, :], 3.0)[0], rel=1e-12)
    assert md.records[-1]["norm_v"] == pytest.approx(lp_norm_rows(v[None, :], 3.0)[0], rel=1e-12)


# ------------------------------------------------------------------------------ joint regularization path
def test_joint_regularization_path_on_the_example_converges_to_both_svms() -> None:
    J = joint_example()
    path = joint_regularization_path(J, "2", radii=(1.0, 100.0, 3), r_of_R="R", starts=1)
    for res in path.results:
        assert lp_norm_rows(res.W.ravel()[None, :], 2.0)[0] <= res.R * (1 + 1e-15)
        assert lp_norm_rows(res.v[None, :], 2.0)[0] <= res.r * (1 + 1e-15)
        assert res.stationarity < 1e-8
    bW = [r.bregman_to_svm for r in path.results]
    bv = [r.bregman_v_to_svm for r in path.results]
    assert bW[-1] < bW[0] / 10 and bv[-1] < bv[0] / 10
    assert path.results[-1].selected == (0, 0)
    js = path.to_json()
    assert js["r_of_R"] == "R" and js["v_reference"]["svm"] == "decoder"
    assert set(js["path"][0]) >= {"R", "r", "bregman_to_svm", "bregman_v_to_svm", "loss", "stationarity",
                                  "selected_tokens"}


def test_theorem31_quantities_are_exact_scores_of_the_certified_decoder() -> None:
    J = joint_example()
    vref = reference_direction(J, "2", alpha=(0, 0), svm="decoder")
    qs = theorem31_quantities(J, vref, (0, 0))
    # p = 2, two examples, both on the decoder margin: the alpha scores are exactly 1
    assert [e["alpha_score"] for e in qs["per_example"]] == [1.0, 1.0]
    assert all(e["on_decoder_margin"] for e in qs["per_example"])
    assert sorted(set(qs["decoder_support_examples"])) == [0, 1]
    assert qs["per_example"][0]["score_gap"] == pytest.approx(1 - qs["per_example"][0]["best_other_score"])
    assert "not asserted" in qs["note"]


def test_joint_md_path_matches_plain_autograd_training() -> None:
    """Equivalence: the log-domain gradients give the same trajectory as autograd on the model's loss
    with the same optimizer, for the first 40 steps. Later the plain gradient loses digits (its
    ``gamma_a - u`` cancels: relative error ~ eps * gamma / delta, 1e-7 by step 45 here) and the
    trajectories part (measured: direction cosine 0.70 at step 54)."""
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss
    from experiments.optim import LpMirrorDescent

    J = joint_example()
    steps = 40
    md = joint_md_path(J, "1.75", steps=steps, records=5)
    W = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
    v = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = LpMirrorDescent([W, v], lr=0.1, p="1.75", normalize_gradient=True)
    X, y, z = (torch.tensor(a) for a in (J.X, J.y, J.z))
    for _ in range(steps):
        opt.zero_grad()
        model_loss(W, v, X, y, z).backward()
        opt.step()
    last = md.records[-1]
    assert last["step"] == steps
    assert last["norm_W"] == pytest.approx(lp_norm_rows(W.detach().numpy().ravel()[None, :], 1.75)[0], rel=1e-7)
    assert last["norm_v"] == pytest.approx(lp_norm_rows(v.detach().numpy()[None, :], 1.75)[0], rel=1e-7)


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
    for W, v in ((np.array([[-2.5, -1.5], [-2.8, 7.5]]), np.array([-0.01, 0.6])),
                 (np.array([[-25.0, -15.0], [-28.0, 75.0]]), np.array([-3.0, 40.0]))):
        GW, Gv = obj.scaled_gradients(W, v)
        gw, gv = _mp_gradients(J, W, v)
        assert np.allclose(GW.ravel() / np.linalg.norm(GW), gw, atol=1e-13)
        assert np.allclose(Gv / np.linalg.norm(Gv), gv, atol=1e-13)


@settings(deadline=None, max_examples=60)
@given(st.text(alphabet="R0123456789.+-*/^() sqrtlogexpabie_[]'\",:", max_size=30))
@example("R**R**R**R")
@example("exp(exp(exp(R)))")
@example("(" * 50 + "R" + ")" * 50)
@example("(-R)**0.5")
def test_radius_function_never_fails_otherwise(text) -> None:
    """Any text either parses into a function whose values are finite positive floats, or gives MdcertError."""
    try:
        f = parse_radius_function(text)
    except MdcertError:
        return
    for R in (1.0, 10.0, 1000.0):
        try:
            value = f(R)
        except MdcertError:
            continue
        assert math.isfinite(value) and value > 0
