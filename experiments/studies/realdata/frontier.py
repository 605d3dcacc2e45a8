"""The real-data feasibility frontier: certified verdicts of the attention SVM on random subsets
(docs/theory.md section 6.6).

For every modality, size ``n`` and seed, a subset of the training split is drawn by the data loaders
(`experiments.data`), and the attention SVM is certified at two token choices:

- ``opt``: the globally optimal tokens ``argmax_t y_i v^T x_it`` (docs/theory.md section 1.2);
- ``trained``: the tokens a trained model attends to, ``argmax_t a_it(W(K))`` after ``K`` normalized
  gradient steps (mirror descent with p = 2) of the attention model on that subset from ``W(0) = 0``
  (all seeds of one size in one batched `experiments.paths.engine.run_paths` program).

A verdict counts only when the independent checker (`certify.check_certificate`) accepts the
certificate: ``feasible`` (an optimal certificate, so ``A w >= 1`` has a solution), ``infeasible``
(an exact Gordan certificate) or ``undecided`` (no verified result, or a certificate the checker
rejected; the reason is recorded). Feasibility does not depend on p (docs/theory.md section 3.1): one
exponent serves. The solves run in worker processes that import no torch (`JobPool`), while the main
process trains; a certificate from an interrupted run is re-checked before it is used (`verdict_job`).
Certificates are records of the one content-keyed store (`experiments.runtime.store`,
``runs/verdict-KEY.json``, `cert_key`).
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import Future
from typing import Any, Callable

import numpy as np

from experiments.runtime.store import RunStore, content_key
from experiments.studies.realdata.subsets import Subset, draw_subsets, train_alpha

__all__ = [
    "JobPool",
    "Subset",
    "problem_job",
    "job_problem",
    "verdict_job",
    "draw_subsets",
    "train_alpha",
    "run_frontier",
    "frontier_fractions",
    "cert_key",
    "VERDICTS",
    "LOCALITY",
]

VERDICTS = ("feasible", "infeasible", "undecided")
LOCALITY = ("holds", "fails", "undecided")


class JobPool:
    """Jobs in ``workers`` worker processes (0: each job runs at submission): mdcert's process pool
    (`experiments.runtime.pool.Pool`, started at the first submission).

    Workers import the job's module only (certify and theorems, never torch); they ignore Ctrl-C and are
    killed by `close` (an interrupted study does not wait for a running solve), as in `experiments.paths.svm_cache`.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool = None

    def submit(self, fn: Callable[[dict], dict], job: dict) -> Future:
        if self.workers <= 0:
            fut: Future = Future()
            fut.set_result(fn(job))
            return fut
        if self.pool is None:
            from experiments.runtime.pool import Pool

            self.pool = Pool(self.workers)
        return self.pool.submit(fn, job)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(kill=True)
            self.pool = None

    def __enter__(self) -> "JobPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def problem_job(problem, **fields: Any) -> dict:
    """A picklable job: the problem's arrays (no provenance: workers need the data only) and ``fields``."""
    return {
        "X": problem.X,
        "y": problem.y,
        "z": problem.z,
        "v": problem.v,
        "lengths": problem.lengths,
        **fields,
    }


def job_problem(job: dict):
    from certify import AttentionProblem

    return AttentionProblem(job["X"], job["y"], job["z"], job["v"], lengths=job["lengths"])


#: the frontier's certificates in the study's run folder: ``verdict-KEY.json``
CERT_PREFIX = "verdict-"


def _cert_store(cache: str | None) -> RunStore | None:
    """The certificate store in ``cache`` (`experiments.runtime.store`), or None."""
    return None if cache is None else RunStore(cache, prefix=CERT_PREFIX)


def cert_key(problem, alpha, p: str, digits: int) -> str:
    """The content key of a certificate: the data hash, alpha, p and digits (32 hex digits)."""
    return content_key([problem.data_hash(), [int(a) for a in alpha], p, int(digits)], length=32)


def _certify(problem, p, alpha, digits, time_limit, locality):
    """The certificate, and with ``locality`` the `TokensLocallyOptimal` verdict on the same certificate
    (one `theorems.context.CheckContext`: the predicate reuses the solve)."""
    if not locality:
        from certify import certify_svm

        return certify_svm(problem, p, alpha=alpha, digits=digits, time_limit=time_limit), None
    from theorems import TokensLocallyOptimal
    from theorems.context import CheckContext

    ctx = CheckContext(problem, digits=digits, time_limit=time_limit)
    report = TokensLocallyOptimal(alpha=alpha, p=p).check(ctx)
    return ctx.certificate(p, alpha=alpha), {
        "verdict": report.verdict.value,
        "message": report.message,
    }


def verdict_job(job: dict) -> dict:
    """Certify one attention SVM and run the independent checker on it (in a worker process).

    ``job``: the arrays of `problem_job`, ``alpha``, ``p``, ``digits``, ``time_limit`` (certify_svm's: no
    precision increase after it), ``wall_limit`` (the solve is stopped after it, SIGALRM in the job's main
    thread, at the next Python bytecode: undecided), ``cache`` (a directory of certificates from an
    earlier run, or None) and ``locality`` (also decide `TokensLocallyOptimal` at p on the same
    certificate). A stored certificate is used only when the checker accepts it again and it settles
    something (otherwise the SVM is solved afresh); a fresh one is stored before the check.
    """
    from certify import CertStatus, Certificate, MdcertError, check_certificate
    from theorems.timelimit import TimeLimitExceeded, call_with_time_limit

    problem = job_problem(job)
    alpha, p = [int(a) for a in job["alpha"]], job["p"]
    locality = bool(
        job.get("locality")
    )  # its verdict needs the solve itself: no stored certificate
    store = None if locality else _cert_store(job.get("cache"))
    key = None if store is None else cert_key(problem, alpha, p, job["digits"])
    path = None if store is None else store.path(key)
    cert, check, cached, local = None, None, False, None
    t0 = time.perf_counter()
    if path is not None and path.is_file():
        try:
            cert = Certificate.load(path)
            check = check_certificate(problem, cert, p=p, svm="attention", alpha=alpha)
        except (MdcertError, OSError):
            check = None
        # reused only when the checker accepts it again and it settles something (a record proves nothing)
        cached = check is not None and check.ok and cert.status is not CertStatus.NO_VERIFIED_RESULT
    solve_s = None
    if not cached:
        limit = job.get("wall_limit")
        args = (problem, p, alpha, job["digits"], job.get("time_limit"), locality)
        try:
            cert, local = (
                _certify(*args)
                if limit is None
                else call_with_time_limit(_certify, args, seconds=limit)
            )
        except (TimeLimitExceeded, ArithmeticError, RuntimeError, ValueError, MemoryError) as exc:
            why = (
                f"no certificate within the wall-clock limit of {limit:g} s"
                if isinstance(exc, TimeLimitExceeded)
                else f"the solver failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            )
            return {
                "verdict": "undecided",
                "reason": why,
                "status": None,
                "checked": False,
                "cached": False,
                "certify_seconds": time.perf_counter() - t0,
                "check_seconds": None,
                "locally_optimal": "undecided" if locality else None,
                "locality_message": why if locality else None,
            }
        solve_s = time.perf_counter() - t0
        if store is not None:
            store.write_text(key, json.dumps(cert.to_json()))
        t0 = time.perf_counter()
        check = check_certificate(problem, cert, p=p, svm="attention", alpha=alpha)
    check_s = time.perf_counter() - t0
    if not check.ok:
        verdict, reason = (
            "undecided",
            f"the checker rejected the certificate: {check.first_failure}",
        )
    elif cert.status is CertStatus.OPTIMAL:
        verdict, reason = "feasible", "optimal certificate accepted by the checker"
    elif cert.status is CertStatus.INFEASIBLE:
        verdict, reason = "infeasible", "Gordan certificate accepted by the checker"
    else:
        verdict, reason = (
            "undecided",
            str(cert.info.get("reason") or cert.info.get("error") or "no verified result"),
        )
    return {
        "verdict": verdict,
        "reason": reason,
        "status": cert.status.value,
        "checked": bool(check.ok),
        "cached": cached,
        "certify_seconds": solve_s,
        "check_seconds": check_s,
        "locally_optimal": None if local is None else local["verdict"],
        "locality_message": None if local is None else local["message"],
        "torch_loaded": "torch" in sys.modules,
    }


def run_frontier(
    subsets_by_n: dict[int, list[Subset]],
    pool: JobPool,
    *,
    train: dict,
    cert: dict,
    cache: str | None,
    progress: Callable[[str], None],
) -> list[dict]:
    """Certify opt and trained tokens on every subset; one record per subset (see the module docstring).

    Args:
        subsets_by_n: the drawn subsets per size.
        pool: where the certificates are solved and checked.
        train: ``p``, ``lr``, ``steps`` of `train_alpha`.
        cert: ``p``, ``digits``, ``time_limit``, ``wall_limit`` of the certified solves, and
            ``locality_digits`` for the trained tokens, whose job also decides `TokensLocallyOptimal`.
        cache: certificate directory of an interrupted run (reused after re-checking) or None.
    """
    futures: dict[tuple, Future] = {}
    solve = {k: v for k, v in cert.items() if k != "locality_digits"}

    def submit(s: Subset, alpha, *, locality: bool = False) -> tuple:
        key = (s.problem.data_hash(), tuple(int(a) for a in alpha), locality)
        if key not in futures:
            opts = (
                {**solve, "digits": cert.get("locality_digits", solve["digits"])}
                if locality
                else solve
            )
            futures[key] = pool.submit(
                verdict_job,
                problem_job(s.problem, alpha=list(key[1]), cache=cache, locality=locality, **opts),
            )
        return key

    records: list[dict] = []
    opt_keys: dict[tuple, tuple | None] = {}
    for (
        n,
        subsets,
    ) in subsets_by_n.items():  # the globally optimal tokens need no training: start them now
        for s in subsets:
            opt = s.problem.optimal_indices()
            opt_keys[(n, s.seed)] = None if opt.ties else submit(s, opt.indices)
    for n, subsets in subsets_by_n.items():
        alphas, rec = train_alpha([s.problem for s in subsets], **train)
        progress(f"n = {n}: trained {len(subsets)} subsets in {rec['seconds']:.1f} s")
        for b, s in enumerate(subsets):
            opt = s.problem.optimal_indices()
            a = alphas[b]
            records.append(
                {
                    "n": n,
                    "seed": s.seed,
                    "rows": s.rows,
                    "nominal_ratio": n * (s.problem.T - 1) / s.problem.d**2,
                    "ratio": s.rows / s.problem.d**2,
                    "data_hash": s.problem.data_hash(),
                    "ids": list(s.ids),
                    "lengths_mean": float(np.mean(s.problem.valid_lengths)),
                    "opt_ties": [list(t) for t in opt.ties],
                    "trained_alpha": [int(x) for x in a],
                    "trained_equals_opt": None
                    if opt.ties
                    else bool(np.array_equal(a, opt.indices)),
                    "trained_differs_in": None
                    if opt.ties
                    else int(np.sum(a != np.asarray(opt.indices))),
                    "train": {k: (v[b] if isinstance(v, list) else v) for k, v in rec.items()},
                    "_keys": {"opt": opt_keys[(n, s.seed)], "trained": submit(s, a, locality=True)},
                }
            )
    for r in records:
        keys = r.pop("_keys")
        for kind in ("opt", "trained"):
            if keys[kind] is None:
                r[kind] = {
                    "verdict": "undecided",
                    "reason": "exact tie in the token scores: no globally optimal tokens",
                    "status": None,
                    "checked": False,
                    "cached": False,
                }
            else:
                r[kind] = dict(futures[keys[kind]].result())
        progress(
            f"n = {r['n']} seed {r['seed']}: opt {r['opt']['verdict']}, trained {r['trained']['verdict']}"
        )
    return records


def frontier_fractions(records: list[dict]) -> list[dict]:
    """Per size: the fraction of subsets feasible / infeasible / undecided at each token choice, and of
    subsets whose trained tokens are certified locally optimal (HOLDS / FAILS / UNDECIDED)."""
    out = []
    for n in sorted({r["n"] for r in records}):
        rows = [r for r in records if r["n"] == n]
        entry = {
            "n": n,
            "subsets": len(rows),
            "nominal_ratio": rows[0]["nominal_ratio"],
            "ratio_mean": float(np.mean([r["ratio"] for r in rows])),
            "trained_equals_opt": sum(bool(r["trained_equals_opt"]) for r in rows),
        }
        for kind in ("opt", "trained"):
            counts = {v: sum(r[kind]["verdict"] == v for r in rows) for v in VERDICTS}
            entry[kind] = {
                "counts": counts,
                "fractions": {v: c / len(rows) for v, c in counts.items()},
            }
        local = {v: sum(r["trained"].get("locally_optimal") == v for r in rows) for v in LOCALITY}
        entry["trained_locally_optimal"] = {
            "counts": local,
            "fractions": {v: c / len(rows) for v, c in local.items()},
        }
        out.append(entry)
    return out
