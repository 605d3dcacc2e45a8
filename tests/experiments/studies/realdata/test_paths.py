"""Paths at a feasible size: weight statistics, certified references with local optimality, the study."""

from __future__ import annotations

import numpy as np
import pytest

from certify import certify_svm, synthetic_problem
from experiments.studies.realdata.frontier import JobPool, problem_job
from experiments.studies.realdata.paths import (
    DIRECTION_TOL,
    reference_job,
    run_paths_study,
    weight_stats,
)


def test_weight_stats_on_a_known_matrix() -> None:
    W = np.zeros((1, 4, 4))
    W[0, 0, 0], W[0, 1, 2], W[0, 3, 3] = 3.0, -4.0, 0.07  # ||W||_F = 5.0005
    s = weight_stats(W, threshold=0.06)
    assert s["entries"] == 16 and s["count_raw"] == [3] and s["count_unit"] == [2]
    assert s["top_mass"]["0.1"] == [pytest.approx(7 / 7.07)]  # top 2 of 16 entries: 4 + 3 of 7.07
    assert s["top_mass"]["0.25"] == [pytest.approx(1.0)]
    assert (
        s["profile_mean"][0] == pytest.approx(4 / np.sqrt(25.0049)) and s["profile_mean"][-1] == 0.0
    )
    assert s["max_abs"] == [4.0]


def test_reference_job_certifies_the_direction_and_local_optimality() -> None:
    pr = synthetic_problem(n=4, T=4, d=3, seed=2)
    alpha = list(pr.optimal_indices().indices)
    r = reference_job(problem_job(pr, alpha=alpha, p="1.75", digits=30))
    assert r["verdict"] == "holds" and r["status"] == "optimal" and r["checked"]
    assert r["direction_error_upper"] < DIRECTION_TOL
    ref = certify_svm(pr, "1.75", alpha=alpha, digits=30).direction_float()
    assert np.allclose(np.asarray(r["direction"]), ref, atol=1e-12)
    assert r["support"]["tight"] >= 1


def test_paths_study_measures_every_p() -> None:
    pr = synthetic_problem(n=4, T=4, d=3, seed=2)
    out = run_paths_study(
        pr,
        JobPool(0),
        ps=("1.75", "3"),
        steps=(120, 200),
        lr=0.25,
        inits=2,
        init_std=0.1,
        seed=0,
        records=12,
        digits=30,
        threshold=0.06,
        progress=lambda s: None,
    )
    assert set(out["per_p"]) == {"1.75", "3"} and out["optimal_alpha"] == list(
        pr.optimal_indices().indices
    )
    for p, r in out["per_p"].items():
        assert r["trajectories"] == 2 and sum(a["trajectories"] for a in r["alphas"]) == 2
        assert sum(r["locally_optimal"].values()) == 2
        assert (
            len(r["record_steps"]) == len(r["norm"]["mean_curve"])
            and r["record_steps"][-1] == r["steps"]
        )
        finals = r["bregman"]["final"]
        assert all(np.isfinite(finals)) and all(
            f >= 0 for f in finals
        )  # every reference was certified
        assert len(r["weights"]["count_raw"]) == 2 and r["weights"]["entries"] == 9
        assert r["norm"]["fit"].get("expected") == pytest.approx(1 / (float(p) - 1))
