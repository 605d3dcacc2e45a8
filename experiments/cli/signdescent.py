"""``mdcert signdescent``: diagonal-network paths of gd / smoothed sign / Adam with certified references.

``mdcert signdescent PROBLEM --rules sign,adam --eps 1e-3,1e-2,0.025 --alpha 0.1 --lr 1e-3 --steps 100000
-o RUN`` (or ``--synth block --N 5`` to write a seeded regression problem to PROBLEM first). Writes
``RUN/summary.json``, ``RUN/paths.npz`` and, when matplotlib is installed, ``RUN/*.png``
(docs/formats.md) through a temporary directory renamed when complete; the terminal gets one line
per trajectory. The work is `experiments.diagnet.study.run_signdescent`.

``mdcert signdescent --preset paper [--quick] -o RUN``: the set-ups of arXiv 2410.14158 (no PROBLEM;
`experiments.diagnet.paper`), with ``RUN/report.md``; resumable (finished parts are reused).

Exit codes: 0 done; 1 bad input (one line on stderr, nothing written), which includes a system
``X beta = y`` proven inconsistent (the certified references do not exist). Data outside the paper's
setting (N >= D, a zero target) gets a warning on stderr and still runs.
"""

from __future__ import annotations

import argparse

HELP = "diagonal-network paths (gd, smoothed sign, Adam) against certified interpolators and delta-KKT bounds"


def _floats(text: str, option: str) -> tuple[float, ...]:
    from certify.errors import MdcertError

    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise MdcertError(f"{option} must be comma-separated numbers, got {text!r}") from None
    return vals


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", nargs="?", default=None,
                        help="regression problem file (kind = 'regression'); written first with --synth")
    parser.add_argument("--preset", choices=("paper",), default=None,
                        help="run the paper's set-ups (Figs. 1-3, eps grids, Adam) instead of one PROBLEM")
    parser.add_argument("--quick", action="store_true", help="with --preset: short horizons (about a minute)")
    parser.add_argument("--no-figures", dest="figures", action="store_false", help="write no PNG files")
    parser.add_argument("--synth", choices=("block", "gaussian"), default=None, help="write seeded data to PROBLEM first")
    parser.add_argument("--N", type=int, default=5, help="rows of --synth data (default 5)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: 1 for small batches)")
    parser.add_argument("--D", type=int, default=None, help="columns of --synth data (default 2N)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --synth data (default 0)")
    parser.add_argument("--rules", default="sign", help="comma-separated: gd, sign, adam (default sign)")
    parser.add_argument("--eps", default="1e-3,1e-2,0.025", help="comma-separated eps > 0")
    parser.add_argument("--alpha", default="0.1", help="comma-separated initialization scales alpha > 0")
    parser.add_argument("--lr", default="1e-3", help="comma-separated step sizes > 0")
    parser.add_argument("--steps", type=int, default=100_000, help="steps per trajectory (default 1e5)")
    parser.add_argument("--betas", default="0.9,0.999", help="Adam's betas (rule adam only)")
    parser.add_argument("-o", "--output", required=True, help="run directory to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def _preset(args: argparse.Namespace) -> int:
    from certify.errors import MdcertError
    from experiments.diagnet.preset import PAPER_KIND, run_paper
    from experiments.outputs import check_output_dir

    given = [opt for opt, val in (("PROBLEM", args.problem), ("--synth", args.synth)) if val is not None]
    if given:
        raise MdcertError(f"--preset paper makes its own data; drop {', '.join(given)}")
    check_output_dir(args.output, option="-o", overwrite=args.overwrite, kind=PAPER_KIND)
    run_paper(args.output, quick=args.quick, overwrite=args.overwrite)
    print(f"wrote {args.output}/report.md, summary.json, parts/ and figures")
    return 0


def run(args: argparse.Namespace) -> int:
    import sys

    from certify.errors import MdcertError
    from certify.regression import load_regression, regression_problem
    from experiments.diagnet.engine import Rule
    from experiments.diagnet.study import SignConfig, run_signdescent
    from experiments.outputs import check_output_dir, check_output_file, run_dir

    if args.preset is not None:
        return _preset(args)
    if args.quick:
        raise MdcertError("--quick applies only to --preset paper")
    if args.problem is None:
        raise MdcertError("give a PROBLEM file (or --synth block|gaussian to write one), or --preset paper")
    if args.threads is not None and not 1 <= args.threads <= 1024:
        raise MdcertError(f"--threads must be in 1..1024, got {args.threads}")

    try:
        rules = tuple(Rule(r.strip()) for r in args.rules.split(","))
    except ValueError:
        raise MdcertError(f"--rules must be comma-separated from gd, sign, adam; got {args.rules!r}") from None
    betas = _floats(args.betas, "--betas")
    if len(betas) != 2:
        raise MdcertError(f"--betas needs two numbers, got {args.betas!r}")
    config = SignConfig(rules=rules, eps=_floats(args.eps, "--eps"), alpha=_floats(args.alpha, "--alpha"),
                        lr=_floats(args.lr, "--lr"), steps=args.steps, record_every=max(1, args.steps // 100),
                        betas=betas, threads=args.threads)
    for rule in rules:
        config.diag(rule)  # validates the grid before anything is written
    check_output_dir(args.output, option="-o", overwrite=args.overwrite, kind="signdescent",
                     inputs={"the problem file": args.problem})
    if args.synth is not None:
        if not (1 <= args.N <= 10**4 and (args.D is None or 1 <= args.D <= 10**6)):
            raise MdcertError("--N must be in 1..1e4 and --D in 1..1e6")
        check_output_file(args.problem, option="PROBLEM", suffixes=(".npz", ".json"))
        regression_problem(args.synth, N=args.N, D=args.D, seed=args.seed).save(args.problem)
        print(f"wrote {args.problem}: {args.synth} regression data N={args.N} seed={args.seed}")
    problem = load_regression(args.problem)
    result = run_signdescent(problem, config, warn=lambda line: print(f"warning: {line}", file=sys.stderr))
    for line in result.lines():
        print(line)
    with run_dir(args.output, kind="signdescent", overwrite=args.overwrite) as tmp:
        result.write(tmp, figures=args.figures)
    s = result.seconds
    print(f"wall: references {s['references']} s, training {s['training']} s, certified facts "
          f"{s['certified_facts']} s; wrote {args.output}/ (summary.json, paths.npz, figures)")
    return 0
