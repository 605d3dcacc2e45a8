"""Texts of the rate and norm-growth fits (docs/theory.md sections 6.1 and 6.3) and of one ``mdcert
paths`` summary entry, from their JSON dicts as written to summary.json: for the ``mdcert paths``
output and the benchmark tables. Every D says which SVM it is measured against: ``SVM(alpha_final)``
(the tokens the trajectory's final attention selects) or ``SVM(opt)`` (the globally optimal tokens)."""

from __future__ import annotations

__all__ = [
    "interval_text",
    "rate_line",
    "norm_line",
    "needs_text",
    "mean_text",
    "per_p_lines",
    "REF_FINAL",
    "REF_OPT",
    "ONE_TRAJECTORY",
]

REF_FINAL = "SVM(alpha_final)"
REF_OPT = "SVM(opt)"
#: said instead of an interval (or a +- spread) computed from a single trajectory
ONE_TRAJECTORY = "one trajectory, no interval"


def interval_text(ci) -> str:
    """``[lo, hi]`` with 3 significant digits, or an empty string for None."""
    return (
        "" if not ci or ci[0] is None else f" [{ci[0] + 0.0:.3g}, {ci[1] + 0.0:.3g}]"
    )  # + 0.0: no "-0"


def _ci_text(ci, trials) -> str:
    return "" if trials == 1 else interval_text(ci)


def needs_text(needs: dict | None) -> str:
    """What would make an inconclusive verdict possible, with the options that provide it."""
    parts = []
    for key, value in (needs or {}).items():
        if key == "trajectories":
            parts.append(
                f">= {value} trajectories (--inits K >= {value}, or more --trials / problem files)"
            )
        elif key == "horizon" and value == "longer":
            parts.append("a longer horizon (more --steps)")
        elif key == "horizon":
            parts.append(
                "a window that ends before the float floor (fewer --steps, or a smaller --tail)"
            )
    return "" if not parts else "; a verdict needs " + " and ".join(parts)


def rate_line(fit: dict | None) -> str:
    """One line from a `RateFit` JSON dict: the verdict, what decided it, what a verdict would need,
    and both exponents fitted on the whole window (the held-out split's fits are in the figure)."""
    if not fit:
        return "rate: not measured"
    if "error" in fit:
        return f"rate: not fitted ({fit['error']})"
    lf, pf = (
        {k: (float("nan") if v is None and k == "exponent" else v) for k, v in fit[m].items()}
        for m in ("log", "power")
    )
    trials = fit.get("trials")
    win = fit.get("window") or {}
    where = f"k >= {fit['tail_from_step']}" if "tail_from_step" in fit else "the window"
    if win.get("transient_skipped"):
        where += f" (moved from k >= {win['default_from_step']} past a transient)"
    return (
        f"rate {fit['verdict']} ({fit['reason']}){needs_text(fit.get('needs'))}; fitted on {where}: "
        f"(log k)^-a: a = {lf['exponent'] + 0.0:.3g}{_ci_text(lf['ci'], trials)}, "
        f"k^-b: b = {pf['exponent'] + 0.0:.3g}{_ci_text(pf['ci'], trials)}"
        + (f" ({ONE_TRAJECTORY})" if trials == 1 else "")
    )


def norm_line(fit: dict | None) -> str:
    """One line from a `NormFit` JSON dict: the fitted law of the step rule with its interval and window."""
    if not fit:
        return "norm: not measured"
    if "error" in fit:
        return f"norm: not fitted ({fit['error']})"
    if fit.get("r2") is None:  # summary.json's null for NaN: the fitted curve has no variance
        return "norm: not fitted (||W||_p does not change over the fitted window)"
    ci = f" ({ONE_TRAJECTORY})" if fit.get("trials") == 1 else interval_text(fit["ci"])
    fit = {
        k: (float("nan") if v is None and k in ("coefficient", "r2", "other_r2") else v)
        for k, v in fit.items()
    }
    win = f"k >= {fit['tail_from']}"
    moved = fit.get("default_from") is not None and fit["tail_from"] > fit["default_from"]
    if fit.get("settled") is False:
        win += (
            f" (moved from k >= {fit['default_from']} as far as allowed; " if moved else " ("
        ) + "the growth has not settled to one law over the run)"
    elif moved:
        win += f" (moved from k >= {fit['default_from']} past the initial plateau)"
    if fit["law"] == "power":
        exp = "" if fit["expected"] is None else f", 1/(p-1) = {fit['expected']:.3g}"
        bound = (
            ""
            if fit["bound_ratio_max"] is None
            else f", <= {fit['bound_ratio_max']:.3g} x the dual-step bound"
        )
        return (
            f"||W||_p ~ k^{fit['coefficient']:.3g}{ci} on {win} (R^2 {fit['r2']:.3f}{exp}{bound})"
        )
    return (
        f"||W||_p ~ {fit['coefficient']:.3g}{ci} log k + c on {win} (R^2 {fit['r2']:.3f}; power law R^2 "
        f"{fit['other_r2']:.3f})"
    )


def mean_text(mean, std, count) -> str:
    """``m +- s`` over ``count`` trajectories; one trajectory has no spread (said so, never ``+- 0``)."""
    if mean is None:
        return "n/a"
    if count == 1:
        return f"{mean:.3e}"
    return f"{mean:.3e} +- {std:.1e}"


def per_p_lines(e: dict) -> list[str]:
    """The lines of one (p, lr) entry of summary.json: how many trajectories ended at the optimal
    tokens, D_final against each reference (both where they differ), the rate fits and the norm law."""
    K = e.get("trajectories")
    k_opt = e.get("alpha_final_is_opt")
    head = f"{k_opt} of {K} trajectories ended at the optimal tokens" if k_opt is not None else ""
    lines = [head]
    if e.get("bregman_final_mean") is None and e.get("bregman_final_opt_mean") is None:
        lines.append(
            "D_final: not measured (--no-certify)" if e.get("rate_fit") is None else "D_final: n/a"
        )
    else:
        fin = mean_text(
            e.get("bregman_final_mean"), e.get("bregman_final_std"), e.get("bregman_trajectories")
        )
        opt = mean_text(
            e.get("bregman_final_opt_mean"),
            e.get("bregman_final_opt_std"),
            e.get("bregman_opt_trajectories"),
        )
        if k_opt == K and e.get("bregman_final_opt_mean") is not None:
            lines.append(
                f"D_final vs {REF_FINAL} = {REF_OPT} (every trajectory ended at the optimal tokens): {fin}"
                + (" (one trajectory, no spread)" if K == 1 else "")
            )
            lines.append(f"{rate_line(e.get('rate_fit'))}")
        else:
            why = (
                "" if e.get("bregman_final_opt_mean") is not None else " (no unique optimal tokens)"
            )
            lines.append(
                f"D_final vs {REF_FINAL} {fin}; vs {REF_OPT} {opt}{why}"
                + (" (one trajectory, no spread)" if K == 1 else "")
            )
            lines.append(f"vs {REF_FINAL}: {rate_line(e.get('rate_fit'))}")
            if e.get("rate_fit_opt") is not None:
                lines.append(f"vs {REF_OPT}: {rate_line(e.get('rate_fit_opt'))}")
    lines.append(norm_line(e.get("norm_fit")))
    return [ln for ln in lines if ln]
