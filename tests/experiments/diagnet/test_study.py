"""experiments.diagnet.study: paths of gd / sign / Adam with certified references and delta-KKT facts
(docs/theory.md sections 8.3, 8.4, 8.5)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.exact import parse_fraction
from certify.regression import RegressionProblem, regression_problem
from experiments.diagnet import Rule
from experiments.diagnet.figures import have_matplotlib
from experiments.diagnet.study import SignConfig, SignResult, assumption_warnings, run_signdescent


@pytest.fixture(scope="module")
def result() -> SignResult:
    cfg = SignConfig(
        rules=(Rule.SIGN, Rule.GD, Rule.ADAM),
        eps=(1e-2, 0.05),
        alpha=(0.1,),
        lr=(1e-3,),
        steps=3000,
        record_every=500,
    )
    return run_signdescent(regression_problem("block", N=2, seed=0), cfg)


def test_one_row_per_rule_and_grid_point_in_grid_order(result) -> None:
    assert [(r["rule"], r["eps"]) for r in result.rows] == [
        (rule, e) for rule in ("sign", "gd", "adam") for e in (1e-2, 0.05)
    ]
    assert all(
        r["status"] == "finished" and r["alpha"] == 0.1 and r["lr"] == 1e-3 for r in result.rows
    )
    assert result.shape == (2, 4)


def test_proven_bounds_are_consistent_with_the_measurements(result) -> None:
    for r in result.rows:
        # the residual bound is proven from the exact weights; loss = ||r||^2 / 4 is measured in float64
        res_up = parse_fraction(r["residual_l2_upper"])
        assert (
            float(res_up) >= 2 * math.sqrt(r["final_loss"]) * (1 - 1e-6) - 1e-12
        )  # float loss: rounded
        delta_up = parse_fraction(r["delta_upper"])
        assert (
            float(delta_up) >= r["delta_float"] * (1 - 1e-9)
            and float(delta_up) == r["delta_upper_float"]
        )
        if r["distance_to_E_opt_upper"] is not None:
            assert float(parse_fraction(r["distance_to_E_opt_upper"])) == pytest.approx(
                r["distance_to_E_opt_upper_float"], rel=1e-15
            )
        assert r["dist_lp_pm"] > 0 and r["dist_lp"] >= 0 and r["dist_l2"] >= 0
        assert r["dist_psi_pm"] > 0 and r["dist_psi"] >= 0


def test_references_are_the_certified_optima(result) -> None:
    refs = result.references
    assert refs["lp"]["p"] == "3/2" and refs["l2"]["p"] == "2" and set(refs["psi"]) == {"0.1"}
    for ref in (refs["lp"], refs["l2"], refs["psi"]["0.1"]):
        lo, hi = parse_fraction(ref["opt_lower"]), parse_fraction(ref["opt_upper"])
        assert (
            0 < lo <= hi
            and float(hi - lo) < 1e-30
            and float(ref["opt"]) == pytest.approx(float(lo), rel=1e-11)
        )
    # ||beta||_3/2 >= ||beta||_2 for every beta, so the two minima are ordered
    assert float(result.references["lp"]["opt"]) >= float(result.references["l2"]["opt"])


def test_gd_is_independent_of_eps_and_sign_interpolates(result) -> None:
    gd = [r for r in result.rows if r["rule"] == "gd"]
    assert gd[0]["dist_l2"] == gd[1]["dist_l2"]  # eps enters only sign and Adam
    assert all(r["final_loss"] < 1e-12 for r in result.rows if r["rule"] == "sign")


def test_json_and_directory_outputs(result, tmp_path) -> None:
    data = json.loads(json.dumps(result.to_json()))
    assert data["kind"] == "signdescent" and len(data["trajectories"]) == 6
    assert set(data["seconds_wall"]) == {"references", "training", "certified_facts"}
    written = {p.name for p in result.write(tmp_path)}
    assert {"summary.json", "paths.npz"} <= written
    with np.load(tmp_path / "paths.npz") as z:
        assert z["sign_beta"].shape == (2, 7, 4) and list(z["sign_steps"]) == list(
            range(0, 3001, 500)
        )
    if have_matplotlib():
        assert {"trajectories_sign.png", "vs_eps.png"} <= written
        assert (tmp_path / "vs_eps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bare = tmp_path / "bare"
    bare.mkdir()
    assert {p.name for p in result.write(bare, figures=False)} == {"summary.json", "paths.npz"}


def test_an_inconsistent_system_has_no_references() -> None:
    X = np.array([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0]])
    with pytest.raises(
        MdcertError, match=r"X beta = y has no solution .* certified references do not exist"
    ):
        run_signdescent(RegressionProblem(X, np.array([1.0, 2.0])), SignConfig(steps=10))


@pytest.mark.parametrize(
    "X, y, expect",
    [
        (np.eye(2, 4), np.array([1.0, -1.0]), []),
        (
            np.eye(3),
            np.array([1.0, 2.0, 3.0]),
            [r"N = 3 >= D = 3: the sign-descent theory needs D > N"],
        ),
        (np.eye(2, 4), np.array([1.0, 0.0]), [r"zero entries at rows \[1\]: Assumption 3.2"]),
        (np.eye(4, 2), np.zeros(4), [r"N = 4 >= D = 2", r"zero entries at rows \[0, 1, 2, 3\]"]),
    ],
)
def test_assumption_warnings(X, y, expect) -> None:
    got = assumption_warnings(RegressionProblem(X, y))
    assert len(got) == len(expect) and all(
        __import__("re").search(e, g) for e, g in zip(expect, got)
    )


def test_gradient_descent_approaches_its_certified_limit_not_the_norm_minimizers() -> None:
    """Gradient flow from alpha 1 converges to argmin Q_alpha (section 8.9): after 3,000 steps at
    alpha = 0.5 the gd path is far closer to that certified point than to the min-l_{3/2} and
    min-l2 interpolators."""
    cfg = SignConfig(rules=(Rule.GD,), eps=(1e-2,), alpha=(0.5,), lr=(1e-3,), steps=3000)
    res = run_signdescent(regression_problem("block", N=2, seed=0), cfg)
    (row,) = res.rows
    assert row["dist_psi"] + row["dist_psi_pm"] < 0.2 * min(row["dist_lp"], row["dist_l2"])


def test_depth_three_uses_the_l_five_thirds_reference_and_no_depth_two_facts() -> None:
    problem = regression_problem("block", N=2, seed=0)
    cfg = SignConfig(rules=(Rule.SIGN,), eps=(1e-2,), alpha=(0.1,), steps=500, depth=3)
    res = run_signdescent(problem, cfg)
    assert cfg.p == parse_fraction("5/3") and res.references["lp"]["p"] == "5/3"
    assert "depth 2, not of depth 3" in res.references["psi"]["not_defined"]
    (row,) = res.rows
    assert row["status"] == "finished" and "delta_upper" not in row and row["dist_psi"] is None
    assert "not defined" in row["delta_kkt"] and row["dist_lp"] >= 0
    # ||.||_p decreases in p, so min ||.||_2 <= min ||.||_{5/3} <= min ||.||_{3/2}
    l32 = run_signdescent(problem, SignConfig(rules=(Rule.SIGN,), steps=10)).references["lp"]
    lo = parse_fraction(res.references["l2"]["opt_lower"])
    assert lo <= parse_fraction(res.references["lp"]["opt_upper"])
    assert parse_fraction(res.references["lp"]["opt_lower"]) <= parse_fraction(l32["opt_upper"])
    assert "depth 3" in res.lines()[0] or "5/3" in res.lines()[0]


def test_assumption_3_3_is_warned_per_grid_in_one_line() -> None:
    pr = RegressionProblem(np.array([[0.5, 0.5, 0, 0], [0, 0, 0.25, 0.25]]), np.array([1.125, 4.0]))
    assert assumption_warnings(pr, eps=(3 / 64, 1e-3), alpha=(0.25,)) == []  # (18), (19) tight
    (line,) = assumption_warnings(pr, eps=(1e-3, 0.05), alpha=(0.25, 0.3))
    assert line.startswith(
        "Assumption 3.3 (arXiv 2410.14158 eqs. 18-19) is not proved at 3 of 4 (eps, alpha) pairs "
        "(first: eps = 0.001, alpha = 0.3, fails: eq. (19) right at row 0)"
    )
