"""``mdcert paths``: batched mirror-descent training paths and certified directional Bregman rates.

The paper's synthetic study (arXiv 2410.14581, section 6), reproducible from ``--seed``:
``mdcert paths --trials 100 --p 1.75,2,3 --steps 1500,2000,20000 --lr 0.1 --normalize -o RUN``.
Trial t uses ``certify.synthetic_problem(n, T, d, seed=1_000_000*seed + t)``; W(0) has N(0,1)
entries from ``torch.Generator().manual_seed(seed)`` (float64 on the CPU, so every device starts
from the same bits) and is shared by all p and step sizes of a trial (common random numbers).
Your own data: ``mdcert paths A.npz B.npz [--init W0.npy | --init-std S --inits K] ...`` runs the same
grid on the given problem files (equal n and d; shorter T padded, docs/theory.md section 1.3), each
with its own certified SVM directions; the summary's ``config.problems`` records each file's path and
sha256 and ``config.init`` how W(0) was made; ``arrays.npz`` maps trajectories to ``trial`` (problem
index) and ``init`` (initialization index).

After training, each trajectory's alpha is read from its final attention (argmax, as the paper
does); the SVM of that alpha at the trajectory's own p is certified with `certify.certify_svm`
(direction error required below 1e-12, digits raised until it is), as is the SVM of the globally
optimal alpha. ``D_psi(Wbar_mm, Wbar(k))`` is then evaluated on the recorded iterates. ``--cross``
adds the paper's cross grid: the SVM of exponent q against the path of exponent p, measured in the
path's potential psi_p with both directions normalized in the p-norm. SVMs are cached by
(data hash, alpha, p); certification runs in a pool of worker processes that import no torch,
started before training: the globally optimal SVMs, and the SVMs of trajectories that finish early
(shorter step counts), are solved while the remaining paths still run.

Writes ``RUN/summary.json`` (``kind: "paths"``), ``RUN/arrays.npz`` and
``RUN/certificates.jsonl.gz`` into a temporary directory that is renamed at the end. The terminal
gives, per (p, lr), how many trajectories ended at the optimal tokens and every D and rate with the
SVM it is measured against, ``vs SVM(alpha_final)`` and, where they differ, ``vs SVM(opt)``
(`experiments.paths.text.per_p_lines`; docs/theory.md sections 6.2 and 6.3).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

from certify.exact import format_exact, parse_fraction
from experiments.outputs import check_output_dir, run_dir
from experiments.paths.text import per_p_lines
from experiments.terminal import terminal_width, wrap, wrap_lines
from experiments.paths.config import parse_config
from experiments.svm_cache import DIRECTION_TOL, Certifier  # noqa: F401  (DIRECTION_TOL re-exported)

HELP = "batched mirror-descent training paths, certified directional Bregman rates (paper's synthetic study)"

__all__ = ["HELP", "configure", "run", "parse_config", "DIRECTION_TOL"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problems", nargs="*", metavar="PROBLEM",
                        help="problem files (.npz/.json, equal n and d; shorter T padded) to run instead of the "
                             "synthetic trials; each gets its own certified SVM directions")
    parser.add_argument("--init", default=None, metavar="W0.npy",
                        help="initializations: a .npy of shape (d, d) or (K, d, d), used for every dataset")
    parser.add_argument("--init-std", type=float, default=None, dest="init_std",
                        help="random initializations with N(0, S^2) entries (default S = 1)")
    parser.add_argument("--trials", type=int, default=None, help="synthetic datasets (trials), default 100")
    parser.add_argument("--p", default="1.75,2,3", help="comma-separated exponents p > 1 (default 1.75,2,3)")
    parser.add_argument("--steps", default="1500,2000,20000",
                        help="steps per p: one value, or one per p (default 1500,2000,20000)")
    parser.add_argument("--lr", default="0.1", help="comma-separated step sizes, each run with every p (default 0.1)")
    parser.add_argument("--normalize", action="store_true", help="normalized steps G/||G||_q (the paper's setting)")
    parser.add_argument("--inits", type=int, default=None, help="random initializations per dataset (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and initializations (default 0)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="default float64")
    parser.add_argument("--cross", action="store_true", help="also the cross grid: SVM of exponent q vs path of p")
    parser.add_argument("--train-decoder", action="store_true", help="train v jointly (default: fixed unit decoder)")
    parser.add_argument("--decoder-lr", type=float, default=None, help="decoder step size (default: --lr)")
    parser.add_argument("--records", type=int, default=64, help="records per trajectory (default 64)")
    parser.add_argument("--spacing", choices=["auto", "log", "linear"], default="auto",
                        help="record steps: log-spaced, evenly spaced, or auto (default: log-spaced when the run "
                             "is longer than 10x --records, else evenly spaced)")
    parser.add_argument("--tail", type=float, default=0.01,
                        help="rate and norm fits use steps k >= TAIL * max k (default 0.01: the last two decades; "
                             "the last third of that window, in log k, is held out to choose the law)")
    parser.add_argument("--average", choices=["geometric", "arithmetic"], default="geometric",
                        help="curve the rate laws are fitted to: geometric mean of D over trajectories (default, the "
                             "typical trajectory) or arithmetic mean (what the paper plots; the slowest trajectory "
                             "dominates it)")
    parser.add_argument("--digits", type=int, default=30, help="initial digits of the SVM certificates (default 30)")
    parser.add_argument("--workers", type=int, default=None,
                        help="certification processes (default: 2 when 2+ CPUs; 0 = in-process)")
    parser.add_argument("--no-certify", action="store_true", help="skip SVM certificates and Bregman curves")
    parser.add_argument("--n", type=int, default=None, help="examples per synthetic dataset (default 6)")
    parser.add_argument("--T", type=int, default=None, help="tokens per example, synthetic (default 8)")
    parser.add_argument("--d", type=int, default=None, help="dimension, synthetic (default 10)")
    parser.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                        help="progress bar on stderr (auto: only on a terminal)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    parser.add_argument("-o", "--out", required=True, help="run directory to write")


# ---------------------------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> int:
    from experiments.outputs import check_outside
    from experiments.paths.inputs import build, resolve_inputs

    out = Path(args.out)
    check_outside(out, {f"the problem file {p!r}": p for p in args.problems} | {"the --init file": args.init},
                  option="-o")
    inputs = resolve_inputs(args)                         # loads the files; fills in trials, n, T, d, inits
    cfg = parse_config(args)
    if inputs.W0 is not None:
        from experiments.paths.inputs import check_init_range

        check_init_range(inputs.W0, cfg["p"], args.init)
    check_output_dir(args.out, option="-o", overwrite=args.overwrite, kind="paths")
    t_start = time.perf_counter()

    from experiments.paths.engine import resolve_device, run_paths
    from experiments.paths.summary import measure_against_svms, per_p_entry

    device = resolve_device(cfg["device"])
    ps, steps_p, lrs = cfg["p"], cfg["steps"], cfg["lr"]
    inputs = build(args, inputs)
    problems, W0_all = inputs.problems, inputs.W0
    hashes = [pr.data_hash() for pr in inputs.sources]    # certified as the files hold them (padding: no bit)
    d = args.d

    # the grid: p x lr x trial x init
    rows = [(pi, li, t, i) for pi in range(len(ps)) for li in range(len(lrs))
            for t in range(args.trials) for i in range(args.inits)]
    p_idx = np.array([r[0] for r in rows])
    lr_idx = np.array([r[1] for r in rows])
    trial = np.array([r[2] for r in rows])
    init = np.array([r[3] for r in rows])
    B = len(rows)

    certifier = None
    opt_keys: list = [None] * B
    if not args.no_certify:
        certifier = Certifier(inputs.sources, hashes, workers=cfg["workers"], digits=args.digits)
        certifier.progress = {"auto": None, "on": True, "off": False}[args.progress]
        tokens = [pr.optimal_indices() for pr in problems]
        for b in range(B):                                # solved while the paths run
            tk = tokens[trial[b]]
            if tk.unique:
                opt_keys[b] = certifier.submit(int(trial[b]), tk.indices, ps[p_idx[b]])
        certifier.opt_keys = opt_keys
    try:
        def early(ids, _W, att) -> None:                  # certify finished trajectories while others run
            if certifier is None:
                return
            for b, alpha in zip(ids, np.argmax(att, axis=-1)):
                certifier.submit(int(trial[b]), alpha, ps[p_idx[b]], count=False)
                if args.cross:
                    for q in ps:
                        certifier.submit(int(trial[b]), alpha, q, count=False)

        res = run_paths(problems, data_index=trial, p=[ps[j] for j in p_idx], lr=[lrs[j] for j in lr_idx],
                        steps=[steps_p[j] for j in p_idx], W0=W0_all[trial, init], normalize=args.normalize,
                        train_decoder=args.train_decoder, decoder_lr=args.decoder_lr, device=device,
                        dtype=args.dtype, records=args.records, spacing=args.spacing,
                        progress={"auto": None, "on": True, "off": False}[args.progress], on_finish=early)
        t_train = res.elapsed_s
        alpha_final = res.final_alpha()
        t_cert0 = time.perf_counter()
        arrays: dict[str, np.ndarray] = {}
        cert_summary = None
        if certifier is not None:
            arrays, cert_summary = measure_against_svms(certifier, res, trial, [ps[j] for j in p_idx], ps,
                                                         cross=args.cross, d=d)
            cert_summary.update(workers=cfg["workers"], wait_after_training_s=time.perf_counter() - t_cert0)
        t_an0 = time.perf_counter()
        alpha_opt = np.full((B, args.n), -1)
        for b in range(B):
            tk = problems[trial[b]].optimal_indices()
            alpha_opt[b] = tk.indices
        per_p = [per_p_entry(res, arrays, sel=np.flatnonzero((p_idx == pi) & (lr_idx == li)), p=p,
                              p_text=cfg["p_text"][pi], lr=lr, steps=steps_p[pi], args=args, ps=ps,
                              alpha_final=alpha_final, alpha_opt=alpha_opt)
                 for pi, p in enumerate(ps) for li, lr in enumerate(lrs)]
        t_an = time.perf_counter() - t_an0
    finally:
        if certifier is not None:
            certifier.close()

    arrays.update(
        p=np.array([float(ps[j]) for j in p_idx]), p_exact=np.array([f"{ps[j].numerator}/{ps[j].denominator}" for j in p_idx]),
        lr=res.lr, steps=res.steps, trial=trial, init=init, record_steps=res.record_steps, W=res.W, loss=res.loss,
        norm_p=res.norm_p, top_attention=res.top_attention, W_final=res.W_final, attention_final=res.attention_final,
        status=res.status, stop_step=res.stop_step, saturated_step=res.saturated_step, alpha_final=alpha_final,
        alpha_opt=alpha_opt, W0=W0_all[trial, init],
        X=np.stack([pr.X for pr in problems]), y=np.stack([pr.y for pr in problems]),
        z=np.stack([pr.z for pr in problems]), v=np.stack([pr.v for pr in problems]))
    if any(pr.lengths is not None for pr in problems):
        arrays["lengths"] = np.stack([pr.valid_lengths for pr in problems])
    if res.v is not None:
        arrays["v_rec"] = res.v
        arrays["v_final"] = res.v_final
    summary = {
        "kind": "paths", "format": 1, "argv": sys.argv[1:] if sys.argv else [],
        "config": {"trials": args.trials, "p": [f"{p.numerator}/{p.denominator}" for p in ps], "steps": steps_p,
                   "lr": lrs, "normalize": bool(args.normalize), "inits": args.inits, "seed": args.seed,
                   "train_decoder": bool(args.train_decoder), "decoder_lr": args.decoder_lr, "records": args.records,
                   "spacing": args.spacing,
                   "n": args.n, "T": args.T, "d": args.d, "cross": bool(args.cross), "certify": not args.no_certify,
                   "tail": args.tail, "average": args.average,
                   "data_seed": "1000000*seed + trial" if inputs.problem_records is None else None,
                   "init": inputs.init_record, "problems": inputs.problem_records},
        "device": res.device, "dtype": res.dtype, "trajectories": B,
        "elapsed_s": None,
        "timings_s": {"train": t_train, "certify_wait_after_training": None if cert_summary is None else cert_summary["wait_after_training_s"],
                      "analysis": t_an},
        "certificates": cert_summary, "float_limits": list(res.notes), "per_p": per_p,
    }
    _write_run(out, summary, arrays, certifier, t_start, args.overwrite)
    s = summary
    print(f"paths: {B} trajectories on {s['device']} in {s['elapsed_s']:.1f}s (training {t_train:.1f}s) -> {out}")
    width = terminal_width()
    for e in per_p:
        head = f"p={format_exact(parse_fraction(e['p_exact']))} lr={e['lr']:g} steps={e['steps']}: "
        body = per_p_lines(e)
        print("\n".join(wrap(head + body[0], width, first="  ", indent="      ")
                        + wrap_lines(["    " + ln for ln in body[1:]], width)))
    if res.notes:
        print("\n".join(wrap_lines([f"  note: {note}" for note in res.notes], width)))
    return 0


def _write_run(out: Path, summary: dict, arrays: dict, certifier, t_start: float, overwrite: bool) -> None:
    from certify.io.jsonenc import dumps

    with run_dir(out, kind="paths", overwrite=overwrite) as tmp:
        with open(tmp / "arrays.npz", "wb") as fh:
            np.savez_compressed(fh, **arrays)
        if certifier is not None:
            with gzip.open(tmp / "certificates.jsonl.gz", "wt") as fh:
                for key, r in certifier.results().items():
                    fh.write(json.dumps({"data_hash": key[0], "alpha": list(key[1]), "p": f"{key[2].numerator}/{key[2].denominator}",
                                         "digits": r["digits"], "certificate": r["certificate"]}) + "\n")
        summary["elapsed_s"] = time.perf_counter() - t_start
        (tmp / "summary.json").write_text(dumps(summary, indent=1))
