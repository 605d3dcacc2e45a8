"""One-line texts of the rate and norm-growth fits (docs/theory.md sections 6.1 and 6.3), from their
JSON dicts as written to summary.json: for the ``mdcert paths`` output and the benchmark tables."""

from __future__ import annotations

__all__ = ["interval_text", "rate_line", "norm_line"]


def interval_text(ci) -> str:
    """``[lo, hi]`` with 3 significant digits, or an empty string for None."""
    return "" if not ci or ci[0] is None else f" [{ci[0] + 0.0:.3g}, {ci[1] + 0.0:.3g}]"  # + 0.0: no "-0"


def rate_line(fit: dict | None) -> str:
    """One line from a `RateFit` JSON dict: the verdict, what decided it and both exponents."""
    if not fit:
        return "rate: not measured"
    if "error" in fit:
        return f"rate: not fitted ({fit['error']})"
    lf, pf = ({k: (float("nan") if v is None and k == "exponent" else v) for k, v in fit[m].items()} for m in ("log", "power"))
    return (f"rate {fit['verdict']} ({fit['reason']}); (log k)^-a: a = {lf['exponent'] + 0.0:.3g}"
            f"{interval_text(lf['ci'])}, k^-b: b = {pf['exponent'] + 0.0:.3g}{interval_text(pf['ci'])}")


def norm_line(fit: dict | None) -> str:
    """One line from a `NormFit` JSON dict: the fitted law of the step rule with its interval."""
    if not fit:
        return "norm: not measured"
    if "error" in fit:
        return f"norm: not fitted ({fit['error']})"
    if fit.get("r2") is None:  # summary.json's null for NaN: the fitted curve has no variance
        return "norm: not fitted (||W||_p does not change over the fitted window)"
    ci = interval_text(fit["ci"])
    fit = {k: (float("nan") if v is None and k in ("coefficient", "r2", "other_r2") else v) for k, v in fit.items()}
    if fit["law"] == "power":
        exp = "" if fit["expected"] is None else f", 1/(p-1) = {fit['expected']:.3g}"
        bound = "" if fit["bound_ratio_max"] is None else f", <= {fit['bound_ratio_max']:.3g} x the dual-step bound"
        return f"||W||_p ~ k^{fit['coefficient']:.3g}{ci} (R^2 {fit['r2']:.3f}{exp}{bound})"
    return f"||W||_p ~ {fit['coefficient']:.3g}{ci} log k + c (R^2 {fit['r2']:.3f}; power law R^2 {fit['other_r2']:.3f})"
