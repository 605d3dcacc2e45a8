"""Mirror-descent paths on a real-data problem at a feasible size (docs/theory.md section 6.6).

For each p (default 1.1, 1.75, 2, 3) the same K initializations ``W(0) ~ N(0, s^2)`` are trained with
normalized steps (`experiments.paths.engine.run_paths`, one batched program). Per p it reports:

- the training-derived tokens ``argmax_t a_it(W(K))`` of every trajectory (distinct choices, how many
  examples differ from the globally optimal tokens) and, for each distinct choice, the verdict of
  `theorems.TokensLocallyOptimal` (HOLDS / FAILS / UNDECIDED with its message);
- the directional Bregman divergence ``D_psi(Wbar_mm, Wbar(k))`` of each trajectory to the certified SVM
  direction of its own tokens at its p (certified direction error < `DIRECTION_TOL`, digits raised as
  in ``mdcert paths``), and to that of the globally optimal tokens, with the rate fits and the held-out
  verdict of `experiments.paths.rates.fit_rates`;
- ``||W(k)||_p`` and its fitted growth (`experiments.paths.growth.fit_norm_growth`);
- weight statistics of the final iterates and of the certified ``W_mm``: the count of entries with
  ``|W_ij| >= 0.06`` (the paper's threshold) on the raw ``W(K)`` (which grows without bound, so this
  count depends on the horizon and the step size) and on the scale-free ``W / ||W||_F``, the fraction
  of the l1 mass in the top 1%, 5%, 10% and 25% of the entries, and the sorted profile of
  ``|W| / ||W||_F``.

The Bregman values, fits and weight statistics are float64 measurements, not certificates; the
reference directions and the local-optimality verdicts are certified.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable

import numpy as np

from experiments.studies.realdata.frontier import JobPool, job_problem, problem_job

__all__ = ["DIRECTION_TOL", "TOP_FRACTIONS", "reference_job", "weight_stats", "run_paths_study"]

#: certified direction error required of every reference SVM (as in ``mdcert paths``)
DIRECTION_TOL = 1e-12
TOP_FRACTIONS = (0.01, 0.05, 0.10, 0.25)


def reference_job(job: dict) -> dict:
    """`TokensLocallyOptimal` for ``(alpha, p)`` and the certified SVM direction (in a worker process).

    The certificate is the one the predicate used (one `theorems.context.CheckContext`), re-solved with
    twice the digits until its direction error is below `DIRECTION_TOL` (at most 480 digits).
    """
    from certify import CertStatus
    from certify.exact import parse_p
    from theorems import TokensLocallyOptimal
    from theorems.context import CheckContext

    problem = job_problem(job)
    alpha, p, digits = [int(a) for a in job["alpha"]], job["p"], int(job["digits"])
    t0 = time.perf_counter()
    while True:
        ctx = CheckContext(problem, digits=digits)
        report = TokensLocallyOptimal(alpha=alpha, p=p).check(ctx)
        cert = ctx.certificate(p, alpha=alpha)
        err = cert.direction_error_upper
        if (
            cert.status is not CertStatus.OPTIMAL
            or (err is not None and err < DIRECTION_TOL)
            or digits >= 480
        ):
            break
        digits *= 2
    ok = (
        cert.status is CertStatus.OPTIMAL
        and ctx.checked(cert, p=parse_p(p), svm="attention", alpha=tuple(alpha)) is True
    )
    usable = ok and err is not None and err < DIRECTION_TOL
    sup = cert.support
    return {
        "alpha": alpha,
        "p": p,
        "verdict": report.verdict.value,
        "message": report.message,
        "status": cert.status.value,
        "checked": bool(ok),
        "digits": digits,
        "direction_error_upper": None if err is None else float(err),
        "direction": cert.direction_float().tolist() if usable else None,
        "opt_lower": None if cert.opt_lower is None else float(cert.opt_lower),
        "support": None
        if sup is None
        else {k: len(getattr(sup, k)) for k in ("tight", "inactive", "undecided")},
        "seconds": time.perf_counter() - t0,
    }


def weight_stats(W: np.ndarray, *, threshold: float) -> dict:
    """Weight statistics of matrices ``W`` (B, d, d): see the module docstring (one value per matrix)."""
    W = np.asarray(W, dtype=np.float64).reshape(W.shape[0], -1)
    a = np.abs(W)
    fro = np.linalg.norm(W, axis=1, keepdims=True)
    unit = a / np.where(fro > 0, fro, 1.0)
    srt = -np.sort(-unit, axis=1)
    l1 = np.maximum(a.sum(axis=1), np.finfo(float).tiny)
    cum = np.cumsum(-np.sort(-a, axis=1), axis=1) / l1[:, None]
    m = W.shape[1]
    return {
        "entries": int(m),
        "count_raw": [int(c) for c in (a >= threshold).sum(axis=1)],
        "count_unit": [int(c) for c in (unit >= threshold).sum(axis=1)],
        "top_mass": {
            f"{f:g}": [float(x) for x in cum[:, max(1, int(round(f * m))) - 1]]
            for f in TOP_FRACTIONS
        },
        "profile_mean": [float(x) for x in srt.mean(axis=0)],
        "max_abs": [float(x) for x in a.max(axis=1)],
    }


def _stats(x) -> dict:
    x = np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=np.float64)
    if x.size == 0:
        return {"mean": None, "std": None, "count": 0}
    return {"mean": float(x.mean()), "std": float(x.std()), "count": int(x.size)}


def _fit(fn, *args, **kw) -> dict:
    from certify.errors import MdcertError

    try:
        return fn(*args, **kw).to_json()
    except MdcertError as exc:
        return {"error": str(exc)}


def run_paths_study(
    problem,
    pool: JobPool,
    *,
    ps: tuple[str, ...],
    steps: tuple[int, ...],
    lr: float,
    inits: int,
    init_std: float,
    seed: int,
    records: int,
    digits: int,
    threshold: float,
    progress: Callable[[str], None],
    device="cpu",
) -> dict:
    """Train, certify the references, measure; returns the JSON-ready per-p results (module docstring)."""
    from experiments.paths.engine import directional_bregman, run_paths

    d, K = problem.d, inits
    W0 = np.random.default_rng(seed).standard_normal((K, d, d)) * init_std
    P = [p for p in ps for _ in range(K)]
    S = [s for s in steps for _ in range(K)]
    res = run_paths(
        [problem],
        data_index=[0] * len(P),
        p=P,
        lr=[lr] * len(P),
        steps=S,
        W0=np.tile(W0, (len(ps), 1, 1)),
        normalize=True,
        records=records,
        progress=False,
        device=device,
    )
    progress(f"paths: {len(P)} trajectories trained in {res.elapsed_s:.1f} s")
    opt = problem.optimal_indices()
    alpha = res.final_alpha()
    futures = {}

    def submit(a, p) -> tuple:
        key = (tuple(int(x) for x in a), p)
        if key not in futures:
            futures[key] = pool.submit(
                reference_job, problem_job(problem, alpha=list(key[0]), p=p, digits=digits)
            )
        return key

    opt_keys = {p: None if opt.ties else submit(opt.indices, p) for p in ps}
    keys = [submit(alpha[b], P[b]) for b in range(len(P))]
    refs = {k: f.result() for k, f in futures.items()}

    def directions(ks) -> np.ndarray:
        out = np.full((len(ks), d, d), np.nan)
        for i, k in enumerate(ks):
            if k is not None and refs[k]["direction"] is not None:
                out[i] = np.asarray(refs[k]["direction"])
        return out

    D = directional_bregman(res.W, res.record_steps, directions(keys), P)
    D_opt = directional_bregman(res.W, res.record_steps, directions([opt_keys[p] for p in P]), P)
    out = {
        p: _per_p(
            res,
            refs,
            keys,
            opt_keys[p],
            opt,
            D,
            D_opt,
            sel=np.arange(j * K, (j + 1) * K),
            p=p,
            steps=int(steps[j]),
            lr=lr,
            threshold=threshold,
            directions=directions,
        )
        for j, p in enumerate(ps)
    }
    return {
        "training_seconds": float(res.elapsed_s),
        "per_p": out,
        "optimal_alpha": None if opt.ties else list(opt.indices),
        "certificates": len(futures),
    }


def _curve(D: np.ndarray) -> list | None:
    """The mean over trajectories per record (None where no trajectory has a value)."""
    if not np.any(np.isfinite(D)):
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(D, axis=0)
    return [float(x) if np.isfinite(x) else None for x in m]


def _per_p(
    res,
    refs: dict,
    keys: list,
    opt_key,
    opt,
    D,
    D_opt,
    *,
    sel,
    p: str,
    steps: int,
    lr: float,
    threshold: float,
    directions,
) -> dict:
    """The JSON-ready results of one p (module docstring)."""
    from experiments.paths.growth import fit_norm_growth
    from experiments.paths.rates import bregman_floor, fit_rates

    d = res.W.shape[-1]
    k_row = res.record_steps[sel[0]]
    valid = k_row >= 0
    last = [int(np.flatnonzero(res.record_steps[b] >= 0)[-1]) for b in sel]
    errs = [refs[keys[b]]["direction_error_upper"] for b in sel]
    worst = max([e for e in errs if e is not None], default=None)
    floor = bregman_floor(float(p), d * d, direction_error=worst)
    distinct: dict[tuple, int] = {}
    for b in sel:
        distinct[keys[b]] = distinct.get(keys[b], 0) + 1
    fields = (
        "verdict",
        "message",
        "status",
        "checked",
        "digits",
        "direction_error_upper",
        "support",
        "seconds",
    )
    choices = [
        {
            "alpha": list(k[0]),
            "trajectories": c,
            "equals_opt": None if opt.ties else list(k[0]) == list(opt.indices),
            "differs_from_opt_in": None
            if opt.ties
            else int(np.sum(np.asarray(k[0]) != np.asarray(opt.indices))),
            **{f: refs[k][f] for f in fields},
        }
        for k, c in sorted(distinct.items(), key=lambda kv: -kv[1])
    ]
    mm = directions([max(distinct, key=distinct.get)])  # W_mm of the most common trained tokens
    finals = [float(D[b, i]) for b, i in zip(sel, last)]
    return {
        "p": p,
        "steps": steps,
        "lr": lr,
        "trajectories": int(sel.size),
        "status": {s: int(np.sum(res.status[sel] == s)) for s in sorted(set(res.status[sel]))},
        "saturated_step": [int(x) for x in res.saturated_step[sel]],
        "alphas": choices,
        "locally_optimal": {
            v: sum(c["trajectories"] for c in choices if c["verdict"] == v)
            for v in ("holds", "fails", "undecided")
        },
        "opt": None
        if opt_key is None
        else {f: refs[opt_key][f] for f in fields[:6] + ("support",)},
        "record_steps": [int(x) for x in k_row[valid]],
        "bregman": {
            "final": finals,
            "final_stats": _stats(finals),
            "mean_curve": _curve(D[sel][:, valid]),
            "floor": floor,
            "direction_error_upper_max": worst,
            "rate_fit": _fit(fit_rates, k_row[valid], D[sel][:, valid], floor=floor),
        },
        "bregman_opt": {
            "final_stats": _stats([D_opt[b, i] for b, i in zip(sel, last)]),
            "mean_curve": _curve(D_opt[sel][:, valid]),
        },
        "norm": {
            "final": [float(res.norm_p[b, i]) for b, i in zip(sel, last)],
            "mean_curve": [float(x) for x in np.mean(res.norm_p[sel][:, valid], axis=0)],
            "fit": _fit(
                fit_norm_growth,
                k_row[valid],
                res.norm_p[sel][:, valid],
                normalized=True,
                p=float(p),
                lr=lr,
            ),
        },
        "loss_final": _stats([res.loss[b, i] for b, i in zip(sel, last)]),
        "weights": weight_stats(res.W_final[sel], threshold=threshold),
        "weights_W_mm": weight_stats(mm, threshold=threshold) if np.all(np.isfinite(mm)) else None,
    }
