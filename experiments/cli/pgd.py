"""``mdcert pgd``: p-GD paths of a linear classifier against the certified l_p max-margin direction.

``mdcert pgd PROBLEM --p 1.5,2,3 --lr 0.1,1 --inits 8 --steps 100000 [--normalize] -o RUN`` on a
classification problem file (docs/formats.md): certifies ``w_p`` per p, runs every trajectory of the grid
p x lr x init as one batched float64 program (`experiments.linear`), and writes ``RUN/summary.json``,
``RUN/arrays.npz`` and ``RUN/pgd.png`` through a temporary directory renamed when complete (docs/theory.md
7.5). ``--check`` instead checks the hypotheses of the p-GD result (`theorems.pgd`: separability, the
loss, the step size measured along the run's path) and prints one verdict per hypothesis and p; with
``-o`` it also writes the run. Exit 0 when the run or check completed (whatever the verdicts), 1 on
bad input.
"""

from __future__ import annotations

import argparse

HELP = "p-GD paths on a classification problem against the certified l_p max-margin direction (--check: hypotheses)"


def _floats(text: str, option: str) -> tuple[float, ...]:
    from certify.errors import MdcertError

    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise MdcertError(f"{option} must be comma-separated numbers, got {text!r}") from None
    if len(set(vals)) != len(vals):
        raise MdcertError(f"{option} has a repeated value: {text!r}")
    return vals


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="classification problem file (.npz or .json, kind = 'classification')")
    parser.add_argument("--p", default="1.5,2,3", help="comma-separated exponents in (1, 20] (default 1.5,2,3)")
    parser.add_argument("--lr", default="0.1", help="comma-separated step sizes > 0 (default 0.1)")
    parser.add_argument("--inits", type=int, default=8, help="initializations per (p, lr) (default 8)")
    parser.add_argument("--init-scale", type=float, default=0.1,
                        help="w(0) = scale * seeded standard normals (default 0.1; 0 starts at w = 0)")
    parser.add_argument("--loss", choices=("exponential", "logistic"), default="logistic", help="default logistic")
    parser.add_argument("--normalize", action="store_true", help="divide the gradient by its dual norm ||g||_q")
    parser.add_argument("--steps", type=int, default=10_000, help="steps per trajectory (default 1e4)")
    parser.add_argument("--records", type=int, default=100, help="log-spaced record points (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initializations (default 0)")
    parser.add_argument("--digits", type=int, default=30, help="certificate digits (default 30)")
    parser.add_argument("--check", action="store_true", help="check the p-GD hypotheses (theorems.pgd) on the run")
    parser.add_argument("-o", "--output", default=None, help="run directory to write (required without --check)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def run(args: argparse.Namespace) -> int:
    from certify.classification import ClassificationProblem, load_problem
    from certify.errors import MdcertError
    from experiments.runtime.outputs import check_output_dir, check_seed, run_dir

    if args.output is None and not args.check:
        raise MdcertError("-o RUN is required (the run directory to write), or give --check")
    if not 1 <= args.digits <= 2000:
        raise MdcertError(f"invalid --digits {args.digits}; give an integer between 1 and 2000")
    check_seed(args.seed)
    from experiments.linear import PgdConfig

    config = PgdConfig(ps=_floats(args.p, "--p"), lrs=_floats(args.lr, "--lr"), inits=args.inits,
                       init_scale=args.init_scale, loss=args.loss, normalize=args.normalize, steps=args.steps,
                       records=args.records, seed=args.seed)
    if args.output is not None:
        check_output_dir(args.output, option="-o", overwrite=args.overwrite, kind="pgd",
                         inputs={"the problem file": args.problem})
    problem = load_problem(args.problem)
    if not isinstance(problem, ClassificationProblem):
        raise MdcertError(f"{args.problem!r} is an attention problem; mdcert pgd needs a classification problem "
                          f"(kind = 'classification': X, y; see 'mdcert synth --classification')")
    from experiments.linear import run_pgd

    result = run_pgd(problem, config, name=str(args.problem), digits=args.digits)
    for line in result.lines():
        print(line)
    if args.check:
        _check(problem, result, args)
    if args.output is not None:
        with run_dir(args.output, kind="pgd", overwrite=args.overwrite) as tmp:
            result.write(tmp)
    s = result.seconds
    print(f"wall: certify {s['certify_wall']} s, training {s['train_wall']} s (CPU {s['train_cpu']} s), analysis "
          f"{s['analysis_wall']} s" + (f"; wrote {args.output}/summary.json" if args.output else ""))
    return 0


def _check(problem, result, args) -> None:
    from experiments.linear.engine import float_rows
    from experiments.linear.smoothness import smoothness_margins
    from theorems.pgd import PGD_STATEMENT, loss_exponential_tail, separable, step_size_measured

    print(f"checking: {PGD_STATEMENT.statement} ({PGD_STATEMENT.reference}; hypotheses are the literature's "
          f"standard ones, docs/theory.md section 7.6)")
    loss = loss_exponential_tail(args.loss)
    print(f"  {loss.name}: {loss.verdict.value.upper()} - {loss.message}")
    smooth = smoothness_margins(result.paths, float_rows(problem))
    cfg = result.paths.config
    for p in cfg.ps:
        sep = separable(result.refs[p].certificate)
        print(f"  p={p:g} {sep.name}: {sep.verdict.value.upper()} - {sep.message}")
        for lr in cfg.lrs:
            rows = [b for b, (pp, ll, _) in enumerate(cfg.grid) if pp == p and ll == lr]
            vals = [] if smooth is None else smooth[rows].ravel().tolist()
            st = step_size_measured(vals, where=f" (p={p:g}, lr={lr:g})")
            print(f"  p={p:g} lr={lr:g} {st.name}: {st.verdict.value.upper()} - {st.message}")
