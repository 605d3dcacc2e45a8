"""What the demo says about each stage (`experiments.commands.demo`): the certificate, check and
paths facts read back from the files the stages wrote, the data quantities the init region depends on
(docs/theory.md section 5.4), and an initialization near the certified SVM direction."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "REGION_QUANTITIES",
    "cert_facts",
    "check_facts",
    "near_svm_init",
    "paths_facts",
    "region_quantities",
    "said",
]


def said(step: int, what: str, why: str, summary: list[str]) -> None:
    """The one line of a stage: what it established and why that matters; kept for the summary."""
    print(f"=> {what}; why it matters: {why}", flush=True)
    summary.append(f"  {step}. {what}")


def cert_facts(path: str) -> str:
    import json

    from certify.exact import decimal_digits, format_exact, format_g, parse_fraction

    c = json.loads(Path(path).read_text())
    lo, hi = parse_fraction(c["opt_lower"]), parse_fraction(c["opt_upper"])
    width = (hi - lo) / lo
    digits = "exactly" if width == 0 else f"to {decimal_digits(width)} digits"
    t, i, u = (len(c["support"][k]) for k in ("tight", "inactive", "undecided"))
    return (
        f"proved OPT = {format_g(lo, 10)} of the l_p attention SVM (p = {format_exact(parse_fraction(c['p']))}) "
        f"{digits}, direction error <= {format_g(parse_fraction(c['direction_error_upper']), 2)}, {t} support "
        f"rows tight, {i} inactive, {u} undecided"
    )


#: the region's data quantities (informational evidence of init_in_region), in the order printed
REGION_QUANTITIES = ("OPT = ||W_mm||_p", "margin gap", "score gap", "max_it ||x_it||_2 ||z_i||_2")


def check_facts(path: str) -> str:
    import json

    r = json.loads(Path(path).read_text())
    hyps = r["hypotheses"]
    held = sum(h["verdict"] == "holds" for h in hyps)
    from certify.exact import format_exact, parse_fraction

    mu, R = (
        None if r["quantities"].get(k) is None else format_exact(parse_fraction(r["quantities"][k]))
        for k in ("mu", "R")
    )

    def named(h) -> str:
        if h["name"] == "init_in_region" and mu is not None and R is not None:
            return f"{h['name']} {h['verdict'].upper()} for the given mu = {mu}, R = {R}"
        return f"{h['name']} {h['verdict'].upper()}"

    region = [named(h) for h in hyps if h["name"] == "init_in_region" and h["verdict"] == "holds"]
    others = ", ".join(named(h) for h in hyps if h["verdict"] != "holds")
    return (
        f"Theorem {r['theorem']}: {held} of {len(hyps)} hypotheses proved, verdict {r['verdict'].upper()}"
        + (f" ({others})" if others else "")
        + (f"; {region[0]}" if region else "")
    )


def region_quantities(path: str) -> list[str]:
    """The data quantities the region's mu and R depend on, from the check report (enclosures)."""
    import json

    r = json.loads(Path(path).read_text())
    ev = [e for h in r["hypotheses"] if h["name"] == "init_in_region" for e in h["evidence"]]
    lines = []
    for key in REGION_QUANTITIES:
        for e in ev:
            if e["quantity"].startswith(key) and e.get("lo_approx") is not None:
                lo, hi = e["lo_approx"], e["hi_approx"]
                val = f"{lo:.6g}" if f"{lo:.6g}" == f"{hi:.6g}" else f"[{lo:.6g}, {hi:.6g}]"
                lines.append(f"     {e['quantity']} = {val}")
    return lines


def paths_facts(run: Path) -> str:
    import json

    from certify.exact import format_exact, parse_fraction

    s = json.loads((run / "summary.json").read_text())
    parts = []
    for e in s["per_p"]:
        d = e.get("bregman_final_mean")
        fit = e.get("rate_fit") or {}
        verdict = fit.get("verdict", "n/a")
        if fit.get("state") not in (
            None,
            "asymptotic",
        ):  # why no law was chosen: transient, floor, ...
            verdict += f" ({fit['state']})"
        k_opt = e.get("alpha_final_is_opt")
        ref = "SVM(alpha_final)" + (
            "" if k_opt is None else f", {k_opt} of {e['trajectories']} at the optimal tokens"
        )
        parts.append(
            f"p = {format_exact(parse_fraction(e['p_exact']))}: D_final vs {ref} "
            f"{'n/a' if d is None else f'{d:.2e}'}, rate {verdict}"
        )
    return f"measured {s['trajectories']} trajectories (float64, not a proof): " + "; ".join(parts)


def near_svm_init(cert_path: str, out: Path, *, seed: int) -> str:
    """W(0) = 2 * (certified unit SVM direction) + small seeded noise, saved as .npy."""
    import json

    import numpy as np

    from certify import Certificate
    from experiments.runtime.outputs import write_npy_atomic

    cert = Certificate.from_json(json.loads(Path(cert_path).read_text()))
    direction = cert.direction_float()
    noise = np.random.default_rng(seed).standard_normal(direction.shape)
    write_npy_atomic(out, 2.0 * direction + 0.02 * noise)
    return str(out)
