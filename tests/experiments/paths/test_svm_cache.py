"""Certified reference SVMs for mdcert paths: cache and worker pool (experiments/paths/svm_cache.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from certify import AttentionProblem, synthetic_problem
from experiments.paths.svm_cache import Certifier, references


def test_infeasible_alpha_is_recorded_not_a_crash() -> None:
    """A duplicated token makes the SVM of that alpha infeasible: status 'infeasible', NaN reference."""
    pr = synthetic_problem(seed=0)
    X = pr.X.copy()
    X[0, 1] = X[0, 0]  # token 1 duplicates token 0 in example 0
    bad = AttentionProblem(X, pr.y, pr.z, pr.v)
    cert = Certifier([bad], [bad.data_hash()], workers=0, digits=30)
    k_bad = cert.submit(0, [0, 0, 0, 0, 0, 0], Fraction(3))
    k_ok = cert.submit(0, [2, 0, 0, 0, 0, 0], Fraction(3))
    assert cert.submit(0, [0, 0, 0, 0, 0, 0], Fraction(3)) == k_bad and cert.requests == 3  # cached
    ref, status, err = references(cert, [k_bad, k_ok, None], (10, 10))
    assert status[0] == "infeasible" and np.all(np.isnan(ref[0]))
    assert status[2] == "tie"
    assert status[1] in ("optimal", "infeasible")
    if status[1] == "optimal":
        assert err[1] < 1e-12 and np.all(np.isfinite(ref[1]))


def test_certify_workers_do_not_import_torch() -> None:
    pr = synthetic_problem(seed=2)
    cert = Certifier([pr], [pr.data_hash()], workers=1, digits=30)
    try:
        key = cert.submit(0, pr.optimal_indices().indices, Fraction(2))
        r = cert.results()[key]
    finally:
        cert.close()
    assert r["status"] == "optimal" and r["torch_loaded"] is False


def test_close_kills_a_running_solve_instead_of_waiting_for_it() -> None:
    """An interrupted ``mdcert paths`` stops at once (issue 11 item 12): `close` SIGKILLs the workers,
    whatever they are doing, so they never finish their job after the command has given up. Their exit
    code says so independently of how long the job would have taken (robust on a loaded machine)."""
    import signal
    import time

    pr = synthetic_problem(seed=3)
    cert = Certifier([pr], [pr.data_hash()], workers=2, digits=1000)
    try:
        for p in ("3/2", "7/4", "5/2"):
            cert.submit(0, pr.optimal_indices().indices, Fraction(p))
        workers = cert.processes
        assert len(workers) == 2 and all(w.is_alive() for w in workers)
        time.sleep(0.5)  # started, not finished
    finally:
        cert.close()
    assert [w.exitcode for w in workers] == [-signal.SIGKILL] * 2
    assert cert.pool is None and cert.processes == ()
