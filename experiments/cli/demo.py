"""``mdcert demo``: the main job end to end on a built-in example (the paper-size synthetic problem).

Each stage runs the same code path as its own command (``synth``, ``certify``, ``verify``, ``check``,
``paths``, ``plot``), so the demo is also a smoke test of the whole toolkit. The check stage states
what its verdicts are about: the region's mu and R are inputs (a HOLDS on ``init_in_region`` holds for
the given mu and R), and the data quantities they depend on are printed (docs/theory.md section 5.4).
With ``-o DIR`` every output, figures included (``DIR/paths/*.png``), is kept and named; without it
they live in a temporary directory that is removed, and the demo says so instead of pointing to them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HELP = "run the main job on a built-in example: synthesize, certify, verify, check hypotheses, train, plot"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a short variant (fewer trials and steps; used by CI)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic problem (default 7)")
    parser.add_argument("--p", default="1.75", help="exponent of the certified SVM and the check (default 1.75)")
    parser.add_argument("-o", "--out", default=None,
                        help="keep every output in this new directory (default: a temporary directory, removed)")


def _stage(title: str, argv: list[str]) -> None:
    from experiments.cli.main import main

    print(f"\n== {title}\n$ mdcert {' '.join(argv)}", flush=True)
    rc = main(argv)
    # certify: 0 certified; check: 0 ran. Anything else stops the demo with that stage named.
    if rc != 0:
        raise RuntimeError(f"demo stage '{title}' exited with code {rc}")


def _said(step: int, what: str, why: str, summary: list[str]) -> None:
    """The one line of a stage: what it established and why that matters; kept for the summary."""
    print(f"=> {what}; why it matters: {why}", flush=True)
    summary.append(f"  {step}. {what}")


def _cert_facts(path: str) -> str:
    import json

    from certify.exact import decimal_digits, format_exact, format_g, parse_fraction

    c = json.loads(Path(path).read_text())
    lo, hi = parse_fraction(c["opt_lower"]), parse_fraction(c["opt_upper"])
    width = (hi - lo) / lo
    digits = "exactly" if width == 0 else f"to {decimal_digits(width)} digits"
    t, i, u = (len(c["support"][k]) for k in ("tight", "inactive", "undecided"))
    return (f"proved OPT = {format_g(lo, 10)} of the l_p attention SVM (p = {format_exact(parse_fraction(c['p']))}) "
            f"{digits}, direction error <= {format_g(parse_fraction(c['direction_error_upper']), 2)}, {t} support "
            f"rows tight, {i} inactive, {u} undecided")


#: the region's data quantities (informational evidence of init_in_region), in the order printed
REGION_QUANTITIES = ("OPT = ||W_mm||_p", "margin gap", "score gap", "max_it ||x_it||_2 ||z_i||_2")


def _check_facts(path: str) -> str:
    import json

    r = json.loads(Path(path).read_text())
    hyps = r["hypotheses"]
    held = sum(h["verdict"] == "holds" for h in hyps)
    from certify.exact import format_exact, parse_fraction

    mu, R = (None if r["quantities"].get(k) is None else format_exact(parse_fraction(r["quantities"][k]))
             for k in ("mu", "R"))

    def named(h) -> str:
        if h["name"] == "init_in_region" and mu is not None and R is not None:
            return f"{h['name']} {h['verdict'].upper()} for the given mu = {mu}, R = {R}"
        return f"{h['name']} {h['verdict'].upper()}"

    region = [named(h) for h in hyps if h["name"] == "init_in_region" and h["verdict"] == "holds"]
    others = ", ".join(named(h) for h in hyps if h["verdict"] != "holds")
    return (f"Theorem {r['theorem']}: {held} of {len(hyps)} hypotheses proved, verdict {r['verdict'].upper()}"
            + (f" ({others})" if others else "") + (f"; {region[0]}" if region else ""))


def _region_quantities(path: str) -> list[str]:
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


def _paths_facts(run: Path) -> str:
    import json

    from certify.exact import format_exact, parse_fraction

    s = json.loads((run / "summary.json").read_text())
    parts = []
    for e in s["per_p"]:
        d = e.get("bregman_final_mean")
        fit = e.get("rate_fit") or {}
        verdict = fit.get("verdict", "n/a")
        if fit.get("state") not in (None, "asymptotic"):  # why no law was chosen: transient, floor, ...
            verdict += f" ({fit['state']})"
        k_opt = e.get("alpha_final_is_opt")
        ref = "SVM(alpha_final)" + ("" if k_opt is None else f", {k_opt} of {e['trajectories']} at the optimal tokens")
        parts.append(f"p = {format_exact(parse_fraction(e['p_exact']))}: D_final vs {ref} "
                     f"{'n/a' if d is None else f'{d:.2e}'}, rate {verdict}")
    return f"measured {s['trajectories']} trajectories (float64, not a proof): " + "; ".join(parts)


def _near_svm_init(cert_path: str, out: Path, *, seed: int) -> str:
    """W(0) = 2 * (certified unit SVM direction) + small seeded noise, saved as .npy."""
    import json

    import numpy as np

    from certify import Certificate
    from experiments.outputs import write_npy_atomic

    cert = Certificate.from_json(json.loads(Path(cert_path).read_text()))
    direction = cert.direction_float()
    noise = np.random.default_rng(seed).standard_normal(direction.shape)
    write_npy_atomic(out, 2.0 * direction + 0.02 * noise)
    return str(out)


def run(args: argparse.Namespace) -> int:
    from certify.errors import MdcertError

    import shutil

    from certify.exact import parse_p
    from experiments.outputs import check_output_dir, check_seed, write_marker

    from experiments.paths.config import check_float_p

    start = time.perf_counter()
    check_float_p(parse_p(args.p, name="--p"), str(args.p))  # the demo trains a float64 path at this p
    check_seed(args.seed)
    if args.out is not None:
        if not str(args.out).strip():
            raise MdcertError("-o is empty; give a new directory name")
        if Path(args.out).exists():
            raise MdcertError(f"output directory {args.out!r} already exists; choose a new one")
        check_output_dir(args.out, option="-o", overwrite=False)
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="mdcert-demo-")
        out = Path(tmp.name)
    else:
        out = Path(args.out)
        out.mkdir(parents=True)
    completed = False
    try:
        problem = str(out / "problem.npz")
        cert = str(out / "cert.json")
        report = str(out / "check.json")
        trials, steps = ("8", "300,300,1000") if args.quick else ("30", "1500,2000,5000")
        summary: list[str] = []
        try:
            _stage("1. synthesize the paper-size problem (n=6, T=8, d=10)",
                   ["synth", "--seed", str(args.seed), "-o", problem])
            _said(1, "wrote the paper's synthetic problem (n=6, T=8, d=10) and its globally optimal tokens",
                  "every later stage works on these exact float64 numbers", summary)
            _stage(f"2. certify the l_p attention SVM of the globally optimal tokens (p = {args.p})",
                   ["certify", problem, "--p", args.p, "--alpha", "opt", "--digits", "60", "-o", cert])
            _said(2, _cert_facts(cert), "the SVM direction is the limit Theorem 10 predicts, so every distance "
                  "measured later is to a proven target, not to a solver's guess", summary)
            _stage("3. re-check the certificate independently from the data alone",
                   ["verify", problem, cert])
            _said(3, "the independent checker (no solver) re-proved every claim of the certificate from the data",
                  "a bug in the solver or a tampered file cannot pass as proved", summary)
            init = _near_svm_init(cert, out / "W0.npy", seed=args.seed)
            _stage("4. check the hypotheses of Theorem 10 (local directional convergence) on an initialization\n"
                   "   near the certified SVM direction, along the mirror-descent path the command runs",
                   ["check", problem, "--p", args.p, "--theorem", "10", "--alpha", "opt", "--init", init,
                    "--lr", "0.1", "--mu", "0.1", "--R", "1", "--steps", "300" if args.quick else "2000",
                    "--json", report])
            _said(4, _check_facts(report), "the verdicts concern this path and the given mu = 0.1, R = 1 (inputs, "
                  "never derived: another mu or R can flip init_in_region); the conclusion itself is measured in "
                  "stage 5, not proved", summary)
            quantities = _region_quantities(report)
            if quantities:
                print("   data quantities the admissible mu and R depend on (docs/theory.md 5.4):\n"
                      + "\n".join(quantities), flush=True)
            _stage(f"5. batched mirror-descent paths ({trials} trials x p in 1.75, 2, 3; normalized steps, lr 0.1)",
                   ["paths", "--trials", trials, "--p", "1.75,2,3", "--steps", steps, "--lr", "0.1",
                    "--normalize", "--seed", str(args.seed), "--device", "cpu", "--progress", "off",
                    "-o", str(out / "paths")])
            _said(5, _paths_facts(out / "paths"), "the decay of D_psi to the certified direction is the rate "
                  "the theory is about; 'inconclusive' means this run cannot tell the laws apart (the paths "
                  "output says what a verdict would need)", summary)
            _stage("6. figures", ["plot", str(out / "paths")])
            figures = sorted((out / "paths").glob("*.png"))
            where = (f"in {out / 'paths'} ({', '.join(f.name for f in figures)})" if tmp is None else
                     "in the temporary directory, removed at the end (rerun with -o DIR to keep them)")
            _said(6, f"drew {len(figures)} figures of the paths run {where}",
                  "they show the measured rates against both fitted laws, with their bands", summary)
        except RuntimeError as exc:
            print(f"mdcert demo: {exc}" + ("" if tmp is not None else f"; removed the partial {str(out)!r}"),
                  file=sys.stderr)
            return 1
        print("\n== summary (proved: exact or ball arithmetic; measured: float64 experiments)")
        print("\n".join(summary))
        print(f"demo finished in {time.perf_counter() - start:.1f} s"
              + (f"; outputs in {out}" if tmp is None else " (outputs were temporary; use -o DIR to keep them)"))
        if tmp is None:
            write_marker(out, "demo")                 # an mdcert run directory of kind "demo"
        completed = True
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()
        elif not completed:  # a failed or interrupted demo leaves no half-filled -o directory
            shutil.rmtree(out, ignore_errors=True)
