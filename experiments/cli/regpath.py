"""``mdcert regpath``: regularization paths W(R) (Theorem 6) and joint (W, v) paths (Theorem 31).

Writes ``RUN/summary.json`` (``"kind": "regpath"``, one ``path`` entry per radius) and
``RUN/path.npz`` (the solutions), each through a temporary file and a rename. Everything that can
fail on bad input (radii, p, alpha, r(R), an infeasible or tied reference) fails before anything
is written. Variable-length problems (docs/theory.md section 1.3) run on their valid tokens only.
"""

from __future__ import annotations

import argparse

HELP = "regularization paths W(R) = argmin_{||W||_p <= R} L(W) vs the certified SVM (Theorems 6 and 31)"

__all__ = ["HELP", "configure", "run", "token_notes"]

#: the built-in name of the paper's joint-training example (n=2, T=3, d=2)
JOINT_EXAMPLE = "joint-example"
#: the most random starts (chains) per radius
MAX_STARTS = 1000
#: the most joint mirror-descent steps
MAX_MD_STEPS = 10 ** 9


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", metavar="PROBLEM",
                        help=f"problem file (.npz/.json from 'mdcert synth') or '{JOINT_EXAMPLE}' (the paper's joint example)")
    parser.add_argument("--p", required=True, help="l_p exponent, exact decimal or num/den (e.g. 1.75 or 7/4)")
    parser.add_argument("--radii", default="10:1000:9", metavar="START:STOP:COUNT",
                        help="geometric grid of radii R (default 10:1000:9)")
    parser.add_argument("--starts", type=int, default=3, help="random starts (chains) besides the SVM, uniform-dual and warm starts (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    parser.add_argument("--alpha", default=None,
                        help="reference tokens: 'opt' (globally optimal) or comma-separated indices "
                             "(default: the problem's stored alpha, else 'opt')")
    parser.add_argument("--no-svm-start", action="store_true", help="do not start from the reference SVM direction")
    parser.add_argument("--no-dual-start", action="store_true",
                        help="do not start from the SVM-free direction phi_q(A^T 1) (uniform dual multipliers)")
    parser.add_argument("--loss", default="logistic", choices=["logistic", "exponential"], help="loss (default logistic)")
    parser.add_argument("--digits", type=int, default=30, help="precision requested from the certified SVM solve (default 30)")
    parser.add_argument("--joint", action="store_true", help="joint path over (W, v) with ||v||_p <= r(R)")
    parser.add_argument("--r-of-R", dest="r_of_R", default=None, metavar="EXPR",
                        help="decoder radius as a function of R for --joint, e.g. 'R', 'sqrt(R)', '2*log(R)+1'")
    parser.add_argument("--md-steps", type=int, default=0,
                        help="with --joint: also run the joint mirror-descent path (W(0)=v(0)=0, normalized steps) for this many steps")
    parser.add_argument("--md-lr", type=float, default=0.1, help="step size of the joint mirror-descent path (default 0.1)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty run directory")
    parser.add_argument("-o", "--output", required=True, metavar="RUN",
                        help="run directory to write (written to a temporary directory, renamed when complete)")


def _load(name: str):
    from certify import AttentionProblem

    if name == JOINT_EXAMPLE:
        from experiments.regpath.joint import joint_example

        return joint_example()
    return AttentionProblem.load(name)


def _num(x) -> str:
    return f"{x:.3e}" if isinstance(x, (int, float)) else str(x)


def _ranges(values: list[float]) -> str:
    return ", ".join(f"{x:g}" for x in values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")


def token_notes(summary: dict) -> list[str]:
    """Lines saying where the paths select other tokens than the reference SVM's alpha (softmax argmax):
    there the divergence to the SVM of alpha does not measure convergence (Theorem 31 for joint runs)."""
    alpha = [int(a) for a in summary.get("alpha") or []]
    out = []
    other = [(r["R"], r["selected_tokens"]) for r in summary.get("path", []) if r.get("selected_tokens") is not None
             and [int(t) for t in r["selected_tokens"]] != alpha]
    if alpha and other:
        kinds = sorted({tuple(t) for _, t in other})
        joint = any("bregman_to_selected_svm" in r for r in summary["path"])
        n = len(summary["path"])
        where = (f"at every R ({_ranges([other[0][0]])} to {_ranges([other[-1][0]])})" if len(other) == n > 1
                 else f"at R = {_ranges([R for R, _ in other])}")
        out.append(f"note: {where} the path selects tokens "
                   f"{', '.join(str(list(k)) for k in kinds[:3])} instead of the SVM's alpha = {alpha}; D_W there "
                   f"compares with the SVM of alpha" + (" (bregman_to_selected_svm in summary.json: with the SVM of "
                                                       "the selected tokens)" if joint else ""))
    md = summary.get("joint_md")
    if alpha and md and md.get("records"):
        last = md["records"][-1]
        sel = [int(t) for t in last.get("selected_tokens") or []]
        if sel and sel != alpha:
            ex = [i for i, (a, s) in enumerate(zip(alpha, sel)) if a != s]
            out.append(f"note: joint mirror descent ends on tokens {sel}, not the SVM's alpha = {alpha} (examples "
                       f"{ex[:6]}): it converges toward the SVMs of its own tokens (D_W = "
                       f"{_num(last.get('bregman_W_to_selected_svm'))}, D_v = "
                       f"{_num(last.get('bregman_v_to_selected_svm'))}), not those of alpha (D_W = "
                       f"{_num(last.get('bregman_W'))}, D_v = {_num(last.get('bregman_v'))})")
    return out


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from certify import parse_p
    from certify.errors import MdcertError
    from certify.exact import format_fraction
    from certify.io.jsonenc import dumps
    from certify.problem import resolve_alpha
    from experiments.regpath.fixed import regularization_path
    from experiments.regpath.grid import parse_radii
    from experiments.outputs import check_output_dir, check_seed, run_dir
    from experiments.regpath.svm_reference import reference_direction
    from experiments.terminal import problem_lines, terminal_width

    # ---- validate everything before writing anything
    p = parse_p(args.p, name="--p")
    radii = parse_radii(args.radii)
    check_seed(args.seed)
    if not 0 <= args.starts <= MAX_STARTS:
        raise MdcertError(f"invalid --starts {args.starts}; give a number in 0..{MAX_STARTS}")
    if args.starts == 0 and args.no_svm_start and args.no_dual_start:
        raise MdcertError("no starts: use --starts >= 1 or drop --no-svm-start / --no-dual-start")
    if args.digits < 5:
        raise MdcertError(f"invalid --digits {args.digits}; use at least 5")
    if args.md_steps < 0 or (args.md_steps and not args.joint):
        raise MdcertError("--md-steps needs --joint and a number >= 0")
    if args.md_steps > MAX_MD_STEPS:
        raise MdcertError(f"invalid --md-steps {args.md_steps}; give at most {MAX_MD_STEPS:.0e} steps")
    if not (args.md_lr > 0 and np.isfinite(args.md_lr)):
        raise MdcertError(f"invalid --md-lr {args.md_lr}; give a positive step size")
    r_fun = None
    if args.joint:
        if not args.r_of_R:
            raise MdcertError("--joint needs --r-of-R EXPR (the decoder radius as a function of R, e.g. 'R' or 'sqrt(R)')")
        from experiments.regpath.radius_function import parse_radius_function

        r_fun = parse_radius_function(args.r_of_R)
        r_values = r_fun.values(radii)
    elif args.r_of_R:
        raise MdcertError("--r-of-R is only used with --joint")
    out = check_output_dir(args.output, option="-o", overwrite=args.overwrite, kind="regpath",
                           inputs={"the problem file": None if args.problem == JOINT_EXAMPLE else args.problem})
    problem = _load(args.problem)
    if problem.lengths is not None or problem.provenance:
        print("\n".join(problem_lines(problem, terminal_width())))
    alpha = resolve_alpha(problem, args.alpha if args.alpha is not None else ("opt" if problem.alpha is None else None))
    reference = reference_direction(problem, p, alpha=alpha, digits=args.digits)

    from experiments.progress import progress

    bar = progress(len(radii), desc="regpath: radii", unit="R")

    def show(res) -> None:
        extra, loss = "", f"loss={res.loss:.6g}"
        if hasattr(res, "r"):
            extra = f" r={res.r:<9.4g} D_v={res.bregman_v_to_svm:.3e}"
            loss = f"log L={res.log_loss:.6g}"
        bar.write(f"R={res.R:<10.4g}{extra} D_W={res.bregman_to_svm:.3e} {loss} "
                  f"stationarity={res.stationarity:.1e} tokens={list(res.selected)} winner={res.winner}")
        bar.update()

    import warnings

    # float64 overflow warnings (extreme radii) are collected into summary["float_limits"] and one note each
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        arrays: dict[str, np.ndarray] = {"radii": radii}
        if args.joint:
            from experiments.regpath.joint import joint_regularization_path
            from experiments.regpath.joint_md import joint_md_path

            v_reference = reference_direction(problem, p, alpha=alpha, svm="decoder", digits=args.digits)
            path = joint_regularization_path(problem, p, radii=radii, r_of_R=r_fun, starts=args.starts, seed=args.seed,
                                             alpha=alpha, reference=reference, v_reference=v_reference,
                                             svm_start=not args.no_svm_start, dual_start=not args.no_dual_start,
                                             loss=args.loss, progress=show)
            bar.close()
            summary_body = path.to_json()
            arrays["W"] = np.stack([r.W for r in path.results])
            arrays["v"] = np.stack([r.v for r in path.results])
            arrays["r"] = np.array(r_values)
            if args.md_steps:
                with progress(args.md_steps, desc="regpath: joint mirror descent", unit="step") as md_bar:
                    md = joint_md_path(problem, p, steps=args.md_steps, lr=args.md_lr, alpha=alpha,
                                       reference=reference, v_reference=v_reference, loss=args.loss,
                                       progress=md_bar.set)
                summary_body["joint_md"] = md.to_json()
                last = md.records[-1]
                print(f"joint mirror descent: {args.md_steps} steps, final D_W={_num(last['bregman_W'])} "
                      f"D_v={_num(last['bregman_v'])} tokens={last['selected_tokens']}")
        else:
            path = regularization_path(problem, p, radii=radii, starts=args.starts, seed=args.seed, alpha=alpha,
                                       reference=reference, svm_start=not args.no_svm_start,
                                       dual_start=not args.no_dual_start, loss=args.loss,
                                       digits=args.digits, progress=show)
            bar.close()
            summary_body = path.to_json()
            arrays["W"] = np.stack([r.W for r in path.results])
    for w in caught:
        if not issubclass(w.category, RuntimeWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    summary = {"kind": "regpath", "format": "mdcert-regpath/1", "joint": bool(args.joint),
               "r_of_R": r_fun.text if r_fun is not None else None,
               "problem": {"source": args.problem, "n": problem.n, "T": problem.T, "d": problem.d,
                           "data_hash": problem.data_hash(),
                           **({"lengths": [int(k) for k in problem.lengths]} if problem.lengths is not None else {}),
                           **({"provenance": problem.provenance} if problem.provenance else {})},
               "command": {"p": args.p, "radii": args.radii, "starts": args.starts, "seed": args.seed,
                           "alpha": args.alpha, "loss": args.loss, "digits": args.digits},
               **summary_body}
    summary["p"] = format_fraction(p)
    summary["definitions"] = {
        "bregman_to_svm": "D_psi(Wbar_mm, W(R)/||W(R)||_p), reference first, vs the certified attention SVM of alpha "
                          "(40-digit evaluation; a measurement, not a certified bound)",
        "bregman_v_to_svm": "D_psi(vbar_mm, v/||v||_p) vs the certified decoder SVM of alpha (joint runs)",
        "stationarity": "(R||g||_q + <g, W>) / (R||g||_q): relative first-order gap on the l_p ball (joint: max over "
                        "the W and v blocks); 0 at a KKT point",
        "log_excess_loss": "log(L(W) - L_*), L_* = mean_i l(gamma_i,opt), computed in log domain",
        "selected_tokens": "softmax argmax per example",
        "starts": "random-k chains (seeded, warm-started along R), svm and uniform-dual restarts at every R, "
                  "previous-best warm start; log_excess_gap = gap to the winner in log E (joint: log L)",
    }
    limits = sorted({f"{w.category.__name__}: {w.message}" for w in caught
                     if issubclass(w.category, RuntimeWarning)})
    if limits:
        summary["float_limits"] = limits
    summary["token_notes"] = token_notes(summary)
    text = dumps(summary, indent=1)
    with run_dir(out, kind="regpath", overwrite=args.overwrite) as tmp:   # complete or nothing
        with open(tmp / "path.npz", "wb") as fh:
            np.savez(fh, **arrays)
        (tmp / "summary.json").write_text(text)
    for note in limits:
        print(f"note: float64 limits reached during the path ({note}); values at extreme radii may be inaccurate")
    for line in summary["token_notes"]:
        print(line)
    d = summary["decay"]
    print(f"wrote {out / 'summary.json'}: D(R={radii[0]:g}) = {d['bregman_first']:.3e}, "
          f"D(R={radii[-1]:g}) = {d['bregman_last']:.3e}, ratio {d['ratio_first_over_last']:.3g}")
    return 0
