"""``mdcert check``: check a theorem's hypotheses on a problem (HOLDS / FAILS / UNDECIDED + evidence).

With ``--init W0.npy --lr ETA`` it first runs the mirror-descent path itself (fixed decoder, W from
W0, ``--steps`` steps of `experiments.optim.optimizer.LpMirrorDescent` on `experiments.model`, every iterate
recorded in float64) and checks the step-size hypothesis on that path, with the step rule of the path:
constant steps by default, normalized steps ``G/||G||_q`` with ``--normalize`` (the rule of ``mdcert
paths --normalize``; the hypothesis is then checked with the effective step ``lr/||G(W_k)||_q`` of each
step, docs/theory.md sections 2.3 and 5.5). ``--run DIR --trajectory K`` takes the problem, W(0), p, lr,
step count and step rule of trajectory K of a ``mdcert paths`` run, re-runs that path and reports
whether it ends where the run's did, so that the hypotheses and the run's measured conclusions concern
one trajectory. ``--alpha locally-optimal-from-training`` reads alpha as the argmax of the final
attention (as the paper's code does) and then checks whether it is locally optimal. Exit 0 when the
check ran (whatever the verdicts), 1 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time

HELP = "check a theorem's hypotheses (HOLDS / FAILS / UNDECIDED) with certified evidence"

FROM_TRAINING = "locally-optimal-from-training"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", nargs="?", default=None,
                        help="problem file (.npz or .json, e.g. from 'mdcert synth'); not with --run")
    parser.add_argument("--p", default=None,
                        help="exponent of the l_p potential, exact decimal or num/den (e.g. 1.75); required "
                             "unless --run gives it")
    parser.add_argument("--theorem", default="10", help="theorem number: 6, 8, 10, 11 or 31 (default 10)")
    parser.add_argument("--alpha", default=None,
                        help=f"token indices: 'opt', '{FROM_TRAINING}' (argmax of the final attention of the "
                             f"--init/--lr path) or comma-separated indices like 0,3,1 (default: the problem's "
                             f"alpha, else opt)")
    parser.add_argument("--init", default=None, metavar="W0.npy", help="initial W (d x d float64 .npy)")
    parser.add_argument("--lr", default=None, help="step size eta of the mirror-descent path (exact decimal, e.g. 0.1)")
    parser.add_argument("--steps", type=int, default=None,
                        help="mirror-descent steps to run and check (default 2000)")
    parser.add_argument("--normalize", action="store_true",
                        help="normalized steps G/||G||_q, the rule of 'mdcert paths --normalize' (default: "
                             "constant steps); the step-size hypothesis then uses each step's lr/||G||_q")
    parser.add_argument("--run", default=None, metavar="DIR",
                        help="a 'mdcert paths' run directory: check trajectory --trajectory K of it (its problem, "
                             "W(0), p, lr, steps and step rule)")
    parser.add_argument("--trajectory", type=int, default=None, metavar="K",
                        help="index of the trajectory in the --run directory (0-based, as in its arrays.npz)")
    parser.add_argument("--mu", default=None, help="Bregman radius of the initialization region (input)")
    parser.add_argument("--R", default=None, help="minimal ||W(0)||_p of the initialization region (input)")
    parser.add_argument("--loss", default="logistic", help="loss name or expression in u (default logistic)")
    parser.add_argument("--segment", action="store_true",
                        help="also prove convexity of psi - eta L on every whole segment (interval bisection)")
    parser.add_argument("--digits", type=int, default=30, help="digits of the certified SVM solves (default 30)")
    parser.add_argument("--json", default=None, metavar="report.json", help="also write the report as JSON")


def _load_init(path: str, d: int):
    """The ``--init`` W0 (d, d): the validator ``mdcert paths --init`` uses (`certify.loaders.read_init`)."""
    from certify.loaders import read_init

    return read_init(path, d, stack=False)


def run_path(problem, W0, *, lr: float, p, steps: int, loss: str = "logistic", progress=None):
    """Mirror descent on W with the problem's fixed decoder (constant steps); returns every iterate,
    float64 (steps+1, d, d). ``progress(k)``, when given, is told the steps done (every 64 steps and at
    the end)."""
    return train_path(problem, W0, lr=lr, p=p, steps=steps, loss=loss, progress=progress)[0]


def train_path(problem, W0, *, lr: float, p, steps: int, loss: str = "logistic", normalize: bool = False,
               progress=None):
    """Mirror descent on W with the problem's fixed decoder, constant or normalized steps
    (docs/theory.md section 2.3). Returns ``(iterates (steps+1, d, d) float64, step sizes)``: the step
    sizes are None for constant steps, else the effective size of each step, ``lr/||G(W_k)||_q`` as
    the float64 the optimizer used (``lr`` where the gradient is exactly 0 and no step is taken)."""
    import numpy as np
    import torch

    from certify.errors import MdcertError
    from experiments.model import AttentionModel, problem_tensors
    from experiments.optim.kernels import dual_norm
    from experiments.optim.optimizer import LpMirrorDescent

    data = problem_tensors(problem)
    model = AttentionModel.from_problem(problem, W0=torch.from_numpy(np.array(W0, dtype=np.float64)))
    opt = LpMirrorDescent([model.W], lr=lr, p=p, normalize_gradient=normalize)
    q = float(p / (p - 1)) if normalize else None
    etas = [] if normalize else None
    out = np.empty((steps + 1, problem.d, problem.d), dtype=np.float64)
    out[0] = model.W.detach().numpy()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: extra threads only add contention
    try:
        for k in range(steps):
            opt.zero_grad(set_to_none=True)
            value = model.loss(data.X, data.y, data.z, loss_fn=loss, mask=data.mask)
            value.backward()
            if normalize:
                norm = dual_norm(model.W.grad, q)
                etas.append(float(lr) / norm if norm > 0 else float(lr))
            opt.step()
            out[k + 1] = model.W.detach().numpy()
            if progress is not None and ((k + 1) % 64 == 0 or k + 1 == steps):
                progress(k + 1)
    finally:
        torch.set_num_threads(threads)
    if not np.all(np.isfinite(out)) or (etas is not None and not np.all(np.isfinite(etas))):
        raise MdcertError("the mirror-descent path produced non-finite iterates; lower --lr")
    return out, etas


def format_table(report, *, width: int | None = None) -> str:
    """Plain-text table of hypothesis, verdict, key evidence (what was required, what was found, and
    whether it holds) and what to change, wrapped to ``width`` columns (default: the terminal's,
    `experiments.terminal.terminal_width`); nothing is cut. Wide terminals get four columns, medium
    ones three (evidence and message in one), narrow ones one block per hypothesis."""
    from experiments.terminal import columns, shorten_lists, terminal_width, wrap, wrap_lines

    width = terminal_width() if width is None else max(int(width), 40)
    entries = []
    for h in report.hypotheses:
        deciding = [e for e in h.evidence if e.deciding]
        telling = [e for e in deciding if e.implies() is h.verdict] or deciding or list(h.evidence)
        entries.append((h.name, h.verdict.value.upper(), shorten_lists(telling[0].summary()) if telling else "-",
                        shorten_lists(h.message)))
    wn = max([len("hypothesis")] + [len(e[0]) for e in entries])
    rest = width - wn - 9 - 4
    if rest >= 64:
        we = rest * 11 // 20
        widths = (wn, 9, we, rest - we - 2)
        lines = columns([("hypothesis", "verdict", "key evidence", "message / what to change")], widths)
        lines.append("  ".join("-" * w for w in widths))
        for name, verdict, key, msg in entries:
            lines += columns([(name, verdict, key, msg)], widths)
    elif rest >= 30:
        widths = (wn, 9, rest)
        lines = columns([("hypothesis", "verdict", "key evidence; what to change")], widths)
        lines.append("  ".join("-" * w for w in widths))
        pad = " " * (wn + 9 + 4)
        for name, verdict, key, msg in entries:
            lines += columns([(name, verdict, key)], widths)
            lines += wrap(msg, width, first=pad + "-> ", indent=pad + "   ")
    else:
        lines = []
        for i, (name, verdict, key, msg) in enumerate(entries):
            lines += ([""] if i else []) + wrap(f"{name}  {verdict}", width, first="", indent="    ")
            lines += wrap(key, width, first="  evidence: ", indent="    ")
            lines += wrap(msg, width, first="  -> ", indent="    ")
    head = wrap_lines([f"Theorem {report.theorem}: {report.title}", f"  {shorten_lists(report.reference)}"], width)
    foot = [f"verdict: {report.verdict.value.upper()} (Kleene AND of the hypotheses)"]
    notes = [f"  {h.name}: {shorten_lists(h.message)}" for h in report.hypotheses if h.verdict.value != "holds"]
    if notes:
        foot += ["not holding:"] + notes
    foot.append(f"conclusion (to measure): {shorten_lists(report.conclusion)}")
    return "\n".join(head + [""] + lines + [""] + wrap_lines(foot, width))


def _from_run(args: argparse.Namespace):
    """The trajectory of ``--run DIR --trajectory K`` (None without --run), its settings copied into
    ``args``; a setting given on the command line as well is refused (one source for each)."""
    from certify.errors import MdcertError
    from experiments.paths.trajectory import load_trajectory

    if args.run is None:
        if args.trajectory is not None:
            raise MdcertError("--trajectory K needs --run DIR, the 'mdcert paths' run it belongs to")
        return None
    if args.trajectory is None:
        raise MdcertError("--run DIR needs --trajectory K: the index of the trajectory to check (0-based)")
    given = [name for name, value in (("a problem file", args.problem), ("--p", args.p), ("--init", args.init),
                                      ("--lr", args.lr), ("--steps", args.steps)) if value is not None]
    if args.normalize:
        given.append("--normalize")
    if given:
        raise MdcertError(f"--run takes the problem, --p, --init, --lr, --steps and the step rule from the run; "
                          f"drop {', '.join(given)}")
    traj = load_trajectory(args.run, args.trajectory)
    if traj.steps < 1:
        raise MdcertError(f"trajectory {traj.index} of the run took no step (status {traj.status}); choose another")
    args.p, args.lr, args.steps, args.normalize = (f"{traj.p.numerator}/{traj.p.denominator}", traj.lr,
                                                   traj.steps, traj.normalize)
    return traj


def _path_notes(args: argparse.Namespace, report, trajectory, problem, run_traj) -> dict:
    """What the report means for the trained path: the step rule checked, the re-run against the
    run's record, and a training that ended at tokens that are not locally optimal."""
    import numpy as np

    lines: list[str] = []
    out: dict = {}
    if trajectory is None:
        return {"lines": lines, "json": out}
    rule = "normalized steps G/||G||_q (eta_k = lr/||G(W_k)||_q)" if args.normalize else "constant steps (eta_k = lr)"
    lines.append(f"path: {args.steps} steps of {rule}, lr {args.lr}")
    out["step_rule"] = "normalized" if args.normalize else "constant"
    logits = np.einsum("ntd,de,ne->nt", problem.X, trajectory[-1], problem.z)
    logits[~problem.token_mask] = -np.inf
    alpha_last = np.argmax(logits, axis=1)
    if run_traj is not None:
        from experiments.paths.trajectory import compare_endings

        cmp = compare_endings(run_traj, trajectory[-1], alpha_last)
        out["run"] = {"dir": run_traj.run_dir, "trajectory": run_traj.index, **cmp}
        rel = cmp["relative_distance_W_final"]
        lines.append(f"trajectory {run_traj.index} of {run_traj.run_dir}: the re-run "
                     + ("ends at the run's final tokens" if cmp["same_final_tokens"] else
                        "does NOT end at the run's final tokens")
                     + ("" if rel is None else f", ||W_K - W_run||_F / ||W_run||_F = {rel:.1e}")
                     + ("" if run_traj.dtype == "float64" else f" (the run was {run_traj.dtype}, the re-run float64)"))
    from_training = args.alpha is not None and args.alpha.strip().lower() == FROM_TRAINING
    local = next((h for h in report.hypotheses if h.name == "tokens_locally_optimal"), None)
    if from_training and local is not None and local.verdict.value == "fails":
        msg = (f"training ended at a non-locally-optimal selection: the tokens the final attention selects after "
               f"{args.steps} steps are not locally optimal, so Theorem {report.theorem}'s conclusion says "
               f"nothing about this path's limit (train longer, or from another W(0))")
        lines.append(msg)
        out["training_ended_non_locally_optimal"] = True
    return {"lines": lines, "json": out}


def _write_json(path: str, payload: dict) -> None:
    from certify.io.jsonenc import dumps
    from experiments.outputs import write_text_atomic

    write_text_atomic(path, dumps(payload, indent=2, default=str))


def run(args: argparse.Namespace) -> int:
    from fractions import Fraction

    import numpy as np

    from certify.errors import MdcertError
    from certify.exact import format_g, parse_p
    from experiments.terminal import problem_lines, shorten_lists, terminal_width, wrap_lines
    from certify.problem import AttentionProblem
    from theorems.catalogue import check_theorem, get_theorem
    from theorems.context import CheckContext
    from certify.exact import parse_nonnegative

    from experiments.outputs import check_distinct, check_output_file
    from experiments.progress import progress

    t0 = time.perf_counter()
    theorem = get_theorem(args.theorem)
    run_traj = _from_run(args)               # --run DIR --trajectory K: fills problem, --p, --lr, --steps, ...
    if args.problem is None and run_traj is None:
        raise MdcertError("give a problem file (or --run DIR --trajectory K of a 'mdcert paths' run)")
    if args.p is None:
        raise MdcertError("give --p, the exponent of the l_p potential (e.g. --p 1.75)")
    if args.steps is None:
        args.steps = 2000
    if args.json is not None:
        check_output_file(args.json, option="--json")
        check_distinct({"--json": args.json}, {"the problem file": args.problem, "the --init file": args.init,
                                               "the --run directory": args.run})
    p = parse_p(args.p, name="--p")
    from theorems.loss_parse import parse_loss

    parse_loss(args.loss)  # refused before any work (the symbolic check itself runs with the others)
    if not 1 <= args.steps <= 10 ** 9:
        raise MdcertError(f"invalid --steps {args.steps}; give a positive number of steps (at most 1e9)")
    if not 1 <= args.digits <= 2000:
        raise MdcertError(f"invalid --digits {args.digits}; give an integer between 1 and 2000")
    if run_traj is None and (args.init is None) != (args.lr is None):
        raise MdcertError("give --init and --lr together to run a mirror-descent path (or neither)")
    if args.normalize and args.lr is None:
        raise MdcertError("--normalize is the step rule of a training path: give --init W0.npy and --lr too")
    if args.lr is not None:
        from experiments.paths.config import check_float_p

        check_float_p(p, str(args.p))
    if args.alpha is not None and args.alpha.strip().lower() == FROM_TRAINING and args.lr is None:
        raise MdcertError(f"--alpha {FROM_TRAINING} needs a training path: give --init W0.npy and --lr")
    mu = None if args.mu is None else parse_nonnegative(args.mu, "--mu")
    R = None if args.R is None else parse_nonnegative(args.R, "--R")
    eta = None
    if args.lr is not None:
        eta = parse_nonnegative(args.lr, "--lr")
        if eta <= 0:
            raise MdcertError(f"invalid --lr {args.lr!r}; the step size must be > 0")
        if not Fraction(1, 10 ** 300) <= eta <= 10 ** 300:
            raise MdcertError(f"invalid --lr {args.lr!r}; the step size must be a float64 in (1e-300, 1e300)")
    problem = run_traj.problem if run_traj is not None else AttentionProblem.load(args.problem)
    W0 = trajectory = step_etas = None
    timings = {}
    alpha = args.alpha
    if args.lr is not None:
        from experiments.resources import check_memory

        # the float64 path, then its exact integer logits and ball evaluations (Python objects)
        check_memory((args.steps + 1) * (problem.d ** 2 + problem.n * problem.T) * 300,
                     what=f"a checked path of {args.steps} steps (d={problem.d}, n={problem.n}, T={problem.T})",
                     fix="reduce --steps")
        W0 = run_traj.W0 if run_traj is not None else _load_init(args.init, problem.d)
        if not np.any(W0):
            raise MdcertError("--init is the zero matrix; its direction is undefined - give a nonzero W0")
        loss_name = args.loss.strip().lower()
        if loss_name not in ("logistic", "exponential", "linear"):
            raise MdcertError(f"training supports the losses logistic, exponential, linear; got {args.loss!r}")
        t1 = time.perf_counter()
        with progress(args.steps, desc="check: training path", unit="step") as bar:
            trajectory, step_etas = train_path(problem, W0, lr=float(eta), p=p, steps=args.steps, loss=loss_name,
                                               normalize=args.normalize, progress=bar.set)
            if step_etas is not None:
                step_etas = [Fraction(x) for x in step_etas]        # exact: the float64 each step used
        timings["training_path"] = round(time.perf_counter() - t1, 3)
        if alpha is not None and alpha.strip().lower() == FROM_TRAINING:
            WK = trajectory[-1]
            logits = np.einsum("ntd,de,ne->nt", problem.X, WK, problem.z)
            logits[~problem.token_mask] = -np.inf          # padding is never attended
            alpha = [int(a) for a in np.argmax(logits, axis=1)]
    ctx = CheckContext(problem, digits=args.digits)
    with progress(len(theorem.hypotheses), desc="check: hypotheses", unit="checked", eta=False) as bar:
        def told(done: int, total: int, name: str) -> None:
            bar.set(done)
            bar.stage(name, force=True)

        report = check_theorem(theorem.number, ctx, p=p, alpha=alpha, loss=args.loss, W0=W0, mu=mu, R=R,
                               eta=eta, trajectory=trajectory, segment=args.segment, progress=told,
                               step_etas=step_etas)
    width = terminal_width()
    if problem.lengths is not None or problem.provenance:
        print("\n".join(problem_lines(problem, width)))
    print(format_table(report, width=width))
    timings["total"] = round(time.perf_counter() - t0, 3)
    q = report.quantities
    tail = [f"alpha = {shorten_lists(str(q['alpha']))}" + (f" (argmax of the final attention after {args.steps} steps)"
                                       if args.alpha and args.alpha.strip().lower() == FROM_TRAINING else "")]
    svm = q.get("attention_svm")
    if svm and svm.get("opt_lower"):
        lo, hi = Fraction(svm["opt_lower"]), Fraction(svm["opt_upper"])
        counts = svm.get("support_counts") or {}
        tail.append(f"||W_mm||_p in [{format_g(lo, 12)}, {format_g(hi, 12)}], support rows: "
                    + ", ".join(f"{v} {k}" for k, v in counts.items()))
    notes = _path_notes(args, report, trajectory, problem, run_traj)
    tail += notes["lines"]
    tail.append(f"time: {timings['total']:.2f} s")
    print("\n".join(wrap_lines(tail, width)))
    if args.json:
        payload = report.to_json()
        payload["inputs"] = {"problem": None if args.problem is None else str(args.problem), "p": args.p,
                             "alpha": args.alpha, "init": args.init, "lr": args.lr,
                             "steps": args.steps if args.lr else None, "mu": args.mu, "R": args.R,
                             "loss": args.loss, "digits": args.digits, "segment": args.segment,
                             "step_rule": None if args.lr is None else ("normalized" if args.normalize else "constant"),
                             "run": args.run, "trajectory": args.trajectory}
        payload["path_notes"] = notes["json"]
        payload["quantities"]["seconds"] = {**payload["quantities"].get("seconds", {}), **timings}
        _write_json(args.json, payload)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
