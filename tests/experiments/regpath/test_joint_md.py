"""The joint mirror-descent path (experiments/joint_md.py, Theorem 31)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from experiments.regpath.joint import joint_example
from experiments.regpath.joint_md import joint_md_path
from experiments.regpath.joint_objective import JointObjective
from experiments.regpath.sphere import lp_norm_rows


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
    """Two steps of the path equal the docs/theory.md section 2 update computed by hand."""
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
    assert md.records[-1]["norm_W"] == pytest.approx(
        lp_norm_rows(W.ravel()[None, :], 3.0)[0], rel=1e-12
    )
    assert md.records[-1]["norm_v"] == pytest.approx(lp_norm_rows(v[None, :], 3.0)[0], rel=1e-12)


@pytest.mark.filterwarnings(
    "ignore:LpMirrorDescent.*exactly zero:RuntimeWarning"
)  # W's gradient at W = v = 0
def test_joint_md_path_matches_plain_autograd_training() -> None:
    """Equivalence: the log-domain gradients give the same trajectory as autograd on the model's loss
    with the same optimizer, for the first 40 steps. Later the plain gradient loses digits (its
    ``gamma_a - u`` cancels: relative error ~ eps * gamma / delta, 1e-7 by step 45 here) and the
    trajectories part (measured: direction cosine 0.70 at step 54)."""
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss
    from experiments.optim.optimizer import LpMirrorDescent

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
    assert last["norm_W"] == pytest.approx(
        lp_norm_rows(W.detach().numpy().ravel()[None, :], 1.75)[0], rel=1e-7
    )
    assert last["norm_v"] == pytest.approx(
        lp_norm_rows(v.detach().numpy()[None, :], 1.75)[0], rel=1e-7
    )


def test_a_padded_twin_has_the_same_joint_md_path() -> None:
    """docs/theory.md section 1.3: zero padding appended to the example changes no record."""
    J = joint_example()
    a = joint_md_path(J, "2", steps=60, lr=0.1, records=6)
    b = joint_md_path(J.padded(J.T + 2), "2", steps=60, lr=0.1, records=6)
    assert a.records == b.records and a.skipped_W == b.skipped_W and a.skipped_v == b.skipped_v
