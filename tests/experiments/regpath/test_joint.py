"""Joint (W, v) regularization paths (experiments/joint.py, Theorem 31)."""

from __future__ import annotations

import pytest

from certify import synthetic_problem
from experiments.regpath.joint import joint_example, joint_regularization_path, theorem31_quantities
from experiments.regpath.sphere import lp_norm_rows
from experiments.regpath.svm_reference import reference_direction
from tests.experiments.regpath.twins import assert_same_joint_path, padded_twin


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
    assert set(js["path"][0]) >= {
        "R",
        "r",
        "bregman_to_svm",
        "bregman_v_to_svm",
        "loss",
        "stationarity",
        "selected_tokens",
    }


def test_theorem31_quantities_are_exact_scores_of_the_certified_decoder() -> None:
    J = joint_example()
    vref = reference_direction(J, "2", alpha=(0, 0), svm="decoder")
    qs = theorem31_quantities(J, vref, (0, 0))
    # p = 2, two examples, both on the decoder margin: the alpha scores are exactly 1
    assert [e["alpha_score"] for e in qs["per_example"]] == [1.0, 1.0]
    assert all(e["on_decoder_margin"] for e in qs["per_example"])
    assert sorted(set(qs["decoder_support_examples"])) == [0, 1]
    assert qs["per_example"][0]["score_gap"] == pytest.approx(
        1 - qs["per_example"][0]["best_other_score"]
    )
    assert "not asserted" in qs["note"]


# ------------------------------------------------------------------------------ padding (docs/theory.md section 1.3)
def test_a_padded_twin_has_the_same_joint_path() -> None:
    J = joint_example()
    K = padded_twin(J, seed=3)
    assert K.lengths is not None
    kw = {"radii": (1.0, 100.0, 3), "r_of_R": "sqrt(R)", "starts": 1}
    a, b = joint_regularization_path(J, "2", **kw), joint_regularization_path(K, "2", **kw)
    assert_same_joint_path(a, b)
    assert all(len(row) == J.T for row in b.quantities["decoder_scores"])


def test_a_variable_length_joint_path_reports_valid_tokens_only() -> None:
    P = synthetic_problem(n=3, T=5, d=4, seed=0, min_T=2)
    L = P.valid_lengths.tolist()
    assert len(set(L)) > 1
    kw = {"radii": (1.0, 100.0, 3), "r_of_R": "R", "starts": 1}
    a = joint_regularization_path(P, "2", **kw)
    assert [len(row) for row in a.quantities["decoder_scores"]] == L
    for e in a.quantities["per_example"]:
        assert e["alpha_token"] < L[e["example"]]
    assert all(t < k for res in a.results for t, k in zip(res.selected, L))
    assert_same_joint_path(a, joint_regularization_path(padded_twin(P, seed=4), "2", **kw))
