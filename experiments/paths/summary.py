"""Analysis of a ``mdcert paths`` run: the directional Bregman divergences of every trajectory to the
certified SVM of its final-attention tokens (own p, and every q of the cross grid) and to the SVM of the
globally optimal tokens, and the per-(p, lr) summary (final statistics against both references, how
many trajectories ended at the optimal tokens, rate fits, norm growth)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from certify.errors import MdcertError
from experiments.paths.text import REF_FINAL, REF_OPT
from experiments.paths.svm_cache import DIRECTION_TOL, Certifier, references

__all__ = ["measure_against_svms", "per_p_entry"]


def _stats(x: np.ndarray) -> tuple[float | None, float | None, int]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None, None, 0
    return float(x.mean()), float(x.std()), int(x.size)


def _final_values(curves: np.ndarray) -> np.ndarray:
    out = np.full(curves.shape[0], np.nan)
    for b in range(curves.shape[0]):
        f = np.flatnonzero(np.isfinite(curves[b]))
        if f.size:
            out[b] = curves[b, f[-1]]
    return out


def _rate_json(steps_row: np.ndarray, curves: np.ndarray, fn) -> dict | None:
    valid = steps_row >= 0
    try:
        return fn(steps_row[valid], curves[:, valid]).to_json()
    except MdcertError as exc:
        return {"error": str(exc)}


def measure_against_svms(
    certifier: Certifier, res, trial: np.ndarray, p_rows: list, ps: list, *, cross: bool, d: int
) -> tuple[dict, dict]:
    """Certify every trajectory's final-attention alpha (own p; all q with ``cross``) and measure
    ``D_psi(Wbar_mm, Wbar(k))`` on the recorded iterates; returns (arrays, certificate summary)."""
    from experiments.paths.engine import directional_bregman

    B = len(p_rows)
    alpha_final = res.final_alpha()
    fin_keys = [certifier.submit(int(trial[b]), alpha_final[b], p_rows[b]) for b in range(B)]
    cross_keys = (
        [[certifier.submit(int(trial[b]), alpha_final[b], q) for q in ps] for b in range(B)]
        if cross
        else []
    )
    opt_keys = certifier.opt_keys
    certs = certifier.results()
    ref, svm_status, dir_err = references(certifier, fin_keys, (d, d))
    ref_opt, opt_status, opt_err = references(certifier, opt_keys, (d, d))
    arrays = {
        "bregman": directional_bregman(res.W, res.record_steps, ref, p_rows),
        "bregman_opt": directional_bregman(res.W, res.record_steps, ref_opt, p_rows),
        "W_mm": ref,
        "svm_status": svm_status,
        "direction_error_upper": dir_err,
        "W_mm_opt": ref_opt,
        "svm_opt_status": opt_status,
        "direction_error_upper_opt": opt_err,
    }
    if cross:
        grid = np.full((B, len(ps), res.W.shape[1]), np.nan)
        status = np.empty((B, len(ps)), dtype=object)
        for qi in range(len(ps)):
            refq, stq, _ = references(certifier, [ck[qi] for ck in cross_keys], (d, d))
            grid[:, qi] = directional_bregman(res.W, res.record_steps, refq, p_rows)
            status[:, qi] = stq
        arrays.update(
            cross=grid, cross_status=status.astype(str), cross_q=np.array([float(q) for q in ps])
        )
    errs = [
        r["direction_error_upper"] for r in certs.values() if r["direction_error_upper"] is not None
    ]
    summary = {
        "requests": certifier.requests,
        "unique": len(certs),
        "status_counts": {
            s: sum(r["status"] == s for r in certs.values())
            for s in sorted({r["status"] for r in certs.values()})
        },
        "direction_error_upper_max": max(errs) if errs else None,
        "direction_error_required": DIRECTION_TOL,
        "digits_max": max(r["digits"] for r in certs.values()) if certs else None,
        "solve_seconds_total": sum(r["seconds"] for r in certs.values()),
    }
    return arrays, summary


def per_p_entry(
    res,
    arrays: dict,
    *,
    sel: np.ndarray,
    p: Fraction,
    p_text: str,
    lr: float,
    steps: int,
    trials: int,
    inits: int,
    tail: float,
    average: str = "geometric",
    ps: list,
    alpha_final: np.ndarray,
    alpha_opt: np.ndarray,
) -> dict:
    """The summary of one (p, lr): final Bregman statistics, rate fits with the held-out verdict and the
    curve's state, norm growth against the law of the step rule, cross grid (docs/theory.md section 6).

    ``trials`` and ``inits`` are the run's datasets and initializations per dataset (recorded), ``tail``
    and ``average`` the rate fits' window and averaged curve (`experiments.paths.rates.fit_rates`)."""
    from experiments.paths.growth import fit_norm_growth
    from experiments.paths.rates import bregman_floor, fit_rates

    d = res.W.shape[-1]

    def norm_fit(k, c):
        return fit_norm_growth(
            k, c, normalized=bool(res.normalize), p=float(p), lr=float(lr), tail_fraction=tail
        )

    def rate_fit(direction_errors):
        """fit_rates with the floor set by float64 resolution and the certificates' direction error."""
        worst = (
            float(np.nanmax(direction_errors)) if np.any(np.isfinite(direction_errors)) else None
        )
        floor = bregman_floor(float(p), d * d, direction_error=worst)
        return lambda k, c: fit_rates(k, c, tail_fraction=tail, floor=floor, average=average)

    steps_row = res.record_steps[sel[0]]
    entry = {
        "p": float(p),
        "p_exact": f"{p.numerator}/{p.denominator}",
        "p_text": p_text,
        "lr": lr,
        "steps": int(steps),
        "trials": int(trials),
        "inits": int(inits),
        "trajectories": int(sel.size),
        "status_counts": {
            s: int(np.sum(res.status[sel] == s)) for s in sorted(set(res.status[sel]))
        },
        "alpha_final_is_opt": int(np.sum(np.all(alpha_final[sel] == alpha_opt[sel], axis=1))),
        "references": {
            "bregman": REF_FINAL,
            "bregman_opt": REF_OPT,
            "rate_fit": REF_FINAL,
            "rate_fit_opt": REF_OPT,
        },
        "loss_final_mean": _stats(_final_values(res.loss[sel]))[0],
        "norm_final_mean": _stats(_final_values(res.norm_p[sel]))[0],
        "norm_fit": _rate_json(steps_row, res.norm_p[sel], norm_fit),
    }
    if "bregman" not in arrays:
        entry.update(bregman_final_mean=None, bregman_final_std=None, rate_fit=None)
        return entry
    m, s, c = _stats(_final_values(arrays["bregman"][sel]))
    mo, so, co = _stats(_final_values(arrays["bregman_opt"][sel]))
    st = arrays["svm_status"][sel]
    err = arrays["direction_error_upper"][sel]
    entry["ended_at_optimal_tokens"] = (
        f"{entry['alpha_final_is_opt']} of {entry['trajectories']} trajectories "
        f"ended at the optimal tokens"
    )
    entry["references_coincide"] = entry["alpha_final_is_opt"] == entry["trajectories"]
    entry.update(
        bregman_final_mean=m,
        bregman_final_std=s,
        bregman_trajectories=c,
        bregman_final_opt_mean=mo,
        bregman_final_opt_std=so,
        bregman_opt_trajectories=co,
        svm_status_counts={k: int(np.sum(st == k)) for k in sorted(set(st))},
        direction_error_upper_max=float(np.nanmax(err)) if np.any(np.isfinite(err)) else None,
        rate_fit=_rate_json(steps_row, arrays["bregman"][sel], rate_fit(err)),
        rate_fit_opt=_rate_json(
            steps_row,
            arrays["bregman_opt"][sel],
            rate_fit(arrays["direction_error_upper_opt"][sel]),
        ),
    )
    if "cross" in arrays:
        cm = [_stats(_final_values(arrays["cross"][sel, qi])) for qi in range(len(ps))]
        entry["cross"] = {
            "q": [float(q) for q in ps],
            "bregman_final_mean": [x[0] for x in cm],
            "bregman_final_std": [x[1] for x in cm],
            "trajectories": [x[2] for x in cm],
        }
    return entry
