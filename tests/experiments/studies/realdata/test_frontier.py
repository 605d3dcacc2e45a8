"""The real-data frontier's pieces: certified verdicts (fresh, stored, tampered), training-derived tokens,
the worker pool and the fractions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from certify import AttentionProblem, check_certificate, Certificate, synthetic_problem
from experiments.studies.realdata.frontier import (
    JobPool,
    frontier_fractions,
    problem_job,
    train_alpha,
    verdict_job,
)


def _padded(seed: int = 3) -> AttentionProblem:
    base = synthetic_problem(n=5, T=5, d=4, seed=seed)
    X = np.array(base.X)
    lengths = np.array([5, 3, 4, 2, 5])
    for i, L in enumerate(lengths):
        X[i, L:] = 0.0
    return AttentionProblem(X, base.y, base.z, base.v, lengths=lengths)


def _infeasible() -> tuple[AttentionProblem, list]:
    """A copy of the selected token: a zero constraint row, so the attention SVM is infeasible."""
    base = synthetic_problem(n=3, T=4, d=3, seed=1)
    X = np.array(base.X)
    X[0, 1] = X[0, 0]
    return AttentionProblem(X, base.y, base.z, base.v), [0, 0, 0]


def _job(problem, alpha, cache=None):
    return problem_job(problem, alpha=list(alpha), p="2", digits=12, time_limit=None, cache=cache)


def test_feasible_and_infeasible_verdicts_are_checked() -> None:
    pr = _padded()
    r = verdict_job(_job(pr, pr.optimal_indices().indices))
    assert (
        r["verdict"] == "feasible" and r["status"] == "optimal" and r["checked"] and not r["cached"]
    )
    bad, alpha = _infeasible()
    r = verdict_job(_job(bad, alpha))
    assert r["verdict"] == "infeasible" and r["status"] == "infeasible" and r["checked"]


def test_locality_is_decided_on_the_same_certificate(tmp_path) -> None:
    pr = _padded()
    r = verdict_job(
        {**_job(pr, pr.optimal_indices().indices, str(tmp_path)), "locality": True, "digits": 30}
    )
    assert (
        r["verdict"] == "feasible"
        and r["locally_optimal"] == "holds"
        and "locally optimal" in r["locality_message"]
    )
    assert not any(tmp_path.iterdir())  # such jobs store nothing (their verdict needs the solve)
    bad, alpha = _infeasible()
    r = verdict_job({**_job(bad, alpha), "locality": True})
    assert r["verdict"] == "infeasible" and r["locally_optimal"] == "fails"
    plain = verdict_job(_job(pr, pr.optimal_indices().indices))
    assert plain["locally_optimal"] is None


def test_stored_certificates_are_rechecked_and_tampered_ones_solved_again(tmp_path) -> None:
    pr = _padded()
    alpha = pr.optimal_indices().indices
    first = verdict_job(_job(pr, alpha, str(tmp_path)))
    [record] = list(tmp_path.iterdir())
    again = verdict_job(_job(pr, alpha, str(tmp_path)))
    assert (
        again["cached"]
        and again["verdict"] == first["verdict"] == "feasible"
        and again["certify_seconds"] is None
    )
    data = json.loads(record.read_text())
    data["status"] = "infeasible"  # a record claiming what is false
    record.write_text(json.dumps(data))
    redo = verdict_job(_job(pr, alpha, str(tmp_path)))
    assert not redo["cached"] and redo["verdict"] == "feasible"
    cert = Certificate.load(record)  # the record was replaced by a fresh, valid one
    assert (
        cert.status.value == "optimal" and check_certificate(pr, cert, p="2", alpha=list(alpha)).ok
    )
    record.write_text("{not json")
    assert verdict_job(_job(pr, alpha, str(tmp_path)))["verdict"] == "feasible"


def test_another_problem_does_not_reuse_a_record(tmp_path) -> None:
    a, b = _padded(3), _padded(4)
    verdict_job(_job(a, a.optimal_indices().indices, str(tmp_path)))
    assert not verdict_job(_job(b, b.optimal_indices().indices, str(tmp_path)))["cached"]
    assert len(list(tmp_path.iterdir())) == 2


def test_train_alpha_gives_valid_tokens_deterministically() -> None:
    problems = [_padded(3), _padded(5)]
    alpha, rec = train_alpha(problems, p="2", lr=0.25, steps=60)
    again, _ = train_alpha(problems, p="2", lr=0.25, steps=60)
    assert np.array_equal(alpha, again) and alpha.shape == (2, 5)
    for b, pr in enumerate(problems):
        assert np.all(alpha[b] < pr.valid_lengths)  # never a padding token
    assert rec["init"] == "W(0) = 0" and len(rec["loss_final"]) == 2 and rec["steps"] == 60


def test_pool_workers_give_the_inline_result() -> None:
    pr = _padded()
    job = _job(pr, pr.optimal_indices().indices)
    inline = JobPool(0).submit(verdict_job, job).result()
    with JobPool(1) as pool:
        remote = pool.submit(verdict_job, job).result()
    keys = ("verdict", "status", "checked")
    assert {k: remote[k] for k in keys} == {k: inline[k] for k in keys}
    assert remote["torch_loaded"] is False  # workers import certify and theorems only


@pytest.mark.parametrize(
    "kinds, expected",
    [
        (
            [("feasible", "feasible"), ("infeasible", "feasible"), ("undecided", "infeasible")],
            {"opt": (1, 1, 1), "trained": (2, 1, 0)},
        ),
    ],
)
def test_fractions(kinds, expected) -> None:
    records = [
        {
            "n": 8,
            "nominal_ratio": 1.5,
            "ratio": 1.4,
            "trained_equals_opt": i == 0,
            "opt": {"verdict": o},
            "trained": {"verdict": t},
        }
        for i, (o, t) in enumerate(kinds)
    ]
    [f] = frontier_fractions(records)
    assert (
        f["subsets"] == 3 and f["trained_equals_opt"] == 1 and f["ratio_mean"] == pytest.approx(1.4)
    )
    for kind, (a, b, c) in expected.items():
        assert f[kind]["counts"] == {"feasible": a, "infeasible": b, "undecided": c}
        assert sum(f[kind]["fractions"].values()) == pytest.approx(1.0)


def test_wall_limit_and_solver_failures_are_undecided(monkeypatch) -> None:
    pr = synthetic_problem(n=40, T=8, d=6, seed=0)
    job = {**_job(pr, pr.optimal_indices().indices), "wall_limit": 1e-3}
    r = verdict_job(job)
    assert (
        r["verdict"] == "undecided"
        and "wall-clock limit of 0.001 s" in r["reason"]
        and not r["checked"]
    )

    import certify

    def boom(*args, **kwargs):
        raise ArithmeticError("overflow in the warm start")

    monkeypatch.setattr(certify, "certify_svm", boom)
    r = verdict_job(_job(_padded(), _padded().optimal_indices().indices))
    assert (
        r["verdict"] == "undecided" and "ArithmeticError: overflow in the warm start" in r["reason"]
    )
