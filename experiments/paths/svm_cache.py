"""Certified reference SVMs for ``mdcert paths``: a cache keyed by (data hash, alpha, p), solved in a pool
of worker processes that import no torch (`certify.certify_svm`, digits raised until the certified
direction error is below `DIRECTION_TOL`).

The pool is mdcert's process pool (`experiments.runtime.pool.Pool`, started at the first
submission): its workers die with the parent, are killed by `Certifier.close` (a finished or
interrupted run does not wait for a running solve), ignore Ctrl-C (the parent handles it) and so
never outlive a killed or interrupted ``mdcert paths`` or hold its stdout and stderr open.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction

import numpy as np

__all__ = ["DIRECTION_TOL", "certify_job", "Certifier", "references"]

#: certified direction error required of every reference SVM
DIRECTION_TOL = 1e-12


def certify_job(job: tuple) -> dict:
    """Certify one SVM (runs in a worker process: imports certify only, never torch)."""
    key, X, y, z, v, alpha, p_text, digits, *rest = job
    from certify import AttentionProblem, CertStatus, certify_svm

    problem = AttentionProblem(
        X, y, z, v, lengths=rest[0] if rest else None
    )  # padding: docs/theory.md section 1.3
    t0 = time.perf_counter()
    d = digits
    while True:
        cert = certify_svm(problem, p_text, alpha=list(alpha), digits=d)
        err = cert.direction_error_upper
        if (
            cert.status is not CertStatus.OPTIMAL
            or (err is not None and err < Fraction(DIRECTION_TOL))
            or d >= 480
        ):
            break
        d *= 2
    out = {
        "key": key,
        "status": cert.status.value,
        "digits": d,
        "seconds": time.perf_counter() - t0,
        "torch_loaded": "torch" in sys.modules,
        "direction": None,
        "direction_error_upper": None,
        "certificate": cert.to_json(),
    }
    if cert.status is CertStatus.OPTIMAL:
        out["direction"] = cert.direction_float()
        out["direction_error_upper"] = float(err) if err is not None else None
    return out


class Certifier:
    """Certified reference SVMs, cached by (data hash, alpha, p), solved in a process pool.

    Args:
        problems: the datasets; hashes: their data hashes.
        workers: processes (0: solve in this process when results are asked for).
        digits: initial digits (raised until the direction error is below `DIRECTION_TOL`).
    """

    def __init__(self, problems, hashes, *, workers: int, digits: int) -> None:
        self.problems, self.hashes, self.digits = problems, hashes, digits
        self.jobs: dict[tuple, tuple] = {}
        self.futures: dict[tuple, object] = {}
        self.done: dict[tuple, dict] = {}
        self.requests = 0
        self.opt_keys: list = []
        #: the waiting bar of `results`: None on a terminal only, True / False forced (``--progress``)
        self.progress: bool | None = None
        self.workers = workers
        self.pool = None

    @property
    def processes(self) -> tuple:
        """The worker processes started so far (`close` kills them)."""
        return self.pool.processes if self.pool is not None else ()

    def key(self, trial: int, alpha, p: Fraction) -> tuple:
        return (self.hashes[trial], tuple(int(a) for a in alpha), p)

    def submit(self, trial: int, alpha, p: Fraction, *, count: bool = True) -> tuple:
        self.requests += int(count)
        key = self.key(trial, alpha, p)
        if key not in self.jobs:
            pr = self.problems[trial]
            job = (
                key,
                pr.X,
                pr.y,
                pr.z,
                pr.v,
                key[1],
                f"{p.numerator}/{p.denominator}",
                self.digits,
                pr.lengths,
            )
            self.jobs[key] = job
            if self.workers > 0:
                self.futures[key] = self._submit(job)
        return key

    def _submit(self, job: tuple):
        """Submit to the pool, started now if it is not yet."""
        if self.pool is None:
            from experiments.runtime.pool import Pool

            self.pool = Pool(self.workers)
        return self.pool.submit(certify_job, job)

    def results(self) -> dict[tuple, dict]:
        """Every submitted job's result (waits for them; a progress bar on a terminal, see `progress`)."""
        from experiments.runtime.progress import progress

        pending = [key for key in self.jobs if key not in self.done]
        with progress(
            len(pending),
            desc="paths: certified SVMs",
            unit="svm",
            enabled=self.progress if pending else False,
        ) as bar:
            for key in pending:
                job = self.jobs[key]
                self.done[key] = (
                    self.futures[key].result() if key in self.futures else certify_job(job)
                )
                bar.update()
        return self.done

    def close(self) -> None:
        """Stop the workers now (finished or interrupted: running jobs are abandoned, not awaited)."""
        if self.pool is not None:
            self.pool.shutdown(kill=True)
            self.pool = None


def references(cert: Certifier, keys: list, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    res = cert.results()
    ref = np.full((len(keys),) + shape, np.nan)
    status = np.empty(len(keys), dtype=object)
    err = np.full(len(keys), np.nan)
    for i, k in enumerate(keys):
        if k is None:
            status[i] = "tie"
            continue
        r = res[k]
        status[i] = r["status"]
        if r["direction"] is not None:
            e = r["direction_error_upper"]
            err[i] = np.nan if e is None else e
            if e is not None and e < DIRECTION_TOL:
                ref[i] = r["direction"]
            else:
                status[i] = "direction_error_too_large"
    return ref, status.astype(str), err
