"""``mdcert paths``: batched mirror-descent training paths and certified directional Bregman rates.

The paper's synthetic study (arXiv 2410.14581, section 6), reproducible from ``--seed``:
``mdcert paths --trials 100 --p 1.75,2,3 --steps 1500,2000,20000 --lr 0.1 --normalize -o RUN``.
Trial t uses ``certify.synthetic_problem(n, T, d, seed=1_000_000*seed + t)``; W(0) has N(0,1)
entries from ``torch.Generator().manual_seed(seed)`` (float64 on the CPU, so every device starts
from the same bits) and is shared by all p and step sizes of a trial (common random numbers).

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
``RUN/certificates.jsonl.gz`` into a temporary directory that is renamed at the end.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from certify.errors import MdcertError

HELP = "batched mirror-descent training paths, certified directional Bregman rates (paper's synthetic study)"

__all__ = ["HELP", "configure", "run", "parse_config", "DIRECTION_TOL"]

#: certified direction error required of every reference SVM
DIRECTION_TOL = 1e-12


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, default=100, help="datasets (trials), default 100")
    parser.add_argument("--p", default="1.75,2,3", help="comma-separated exponents p > 1 (default 1.75,2,3)")
    parser.add_argument("--steps", default="1500,2000,20000",
                        help="steps per p: one value, or one per p (default 1500,2000,20000)")
    parser.add_argument("--lr", default="0.1", help="comma-separated step sizes, each run with every p (default 0.1)")
    parser.add_argument("--normalize", action="store_true", help="normalized steps G/||G||_q (the paper's setting)")
    parser.add_argument("--inits", type=int, default=1, help="initializations per dataset (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and initializations (default 0)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="default float64")
    parser.add_argument("--cross", action="store_true", help="also the cross grid: SVM of exponent q vs path of p")
    parser.add_argument("--train-decoder", action="store_true", help="train v jointly (default: fixed unit decoder)")
    parser.add_argument("--decoder-lr", type=float, default=None, help="decoder step size (default: --lr)")
    parser.add_argument("--records", type=int, default=64, help="log-spaced records per trajectory (default 64)")
    parser.add_argument("--tail", type=float, default=0.1,
                        help="rate fits use steps k >= TAIL * max k (default 0.1: the last decade; "
                             "rate_fit_two_decades uses 0.01)")
    parser.add_argument("--digits", type=int, default=30, help="initial digits of the SVM certificates (default 30)")
    parser.add_argument("--workers", type=int, default=None,
                        help="certification processes (default: 2 when 2+ CPUs; 0 = in-process)")
    parser.add_argument("--no-certify", action="store_true", help="skip SVM certificates and Bregman curves")
    parser.add_argument("--n", type=int, default=6, help="examples per dataset (default 6)")
    parser.add_argument("--T", type=int, default=8, help="tokens per example (default 8)")
    parser.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    parser.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                        help="progress bar on stderr (auto: only on a terminal)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    parser.add_argument("-o", "--out", required=True, help="run directory to write")


# ---------------------------------------------------------------------------------------------- config
def _split(text: str, name: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",")]
    if not items or any(s == "" for s in items):
        raise MdcertError(f"--{name} must be a comma-separated list without empty items, got {text!r}")
    return items


def parse_config(args: argparse.Namespace) -> dict:
    """Validate the arguments (before torch is imported); MdcertError with one line on bad input."""
    from certify.exact import parse_p

    ps = [parse_p(s, name="--p") for s in _split(args.p, "p")]
    if len(set(ps)) != len(ps):
        raise MdcertError(f"--p lists a value twice: {args.p!r}")
    steps_txt = _split(args.steps, "steps")
    try:
        steps = [int(s) for s in steps_txt]
    except ValueError:
        raise MdcertError(f"--steps must be integers, got {args.steps!r}") from None
    if len(steps) == 1:
        steps = steps * len(ps)
    if len(steps) != len(ps):
        raise MdcertError(f"--steps has {len(steps)} values but --p has {len(ps)}; give one step count per p (or one for all)")
    if any(k < 1 for k in steps):
        raise MdcertError(f"--steps must be >= 1, got {args.steps!r}")
    lr_txt = _split(args.lr, "lr")
    try:
        lrs = [float(s) for s in lr_txt]
    except ValueError:
        raise MdcertError(f"--lr must be numbers, got {args.lr!r}") from None
    if any(not np.isfinite(x) or x <= 0 for x in lrs):
        raise MdcertError(f"--lr values must be finite and > 0, got {args.lr!r}")
    for name in ("trials", "inits", "n", "T", "d"):
        if getattr(args, name) < (2 if name == "T" else 1):
            raise MdcertError(f"--{name} must be >= {2 if name == 'T' else 1}, got {getattr(args, name)}")
    if not 0 <= args.tail < 1:
        raise MdcertError(f"--tail must be in [0, 1), got {args.tail}")
    if args.records < 2:
        raise MdcertError(f"--records must be >= 2, got {args.records}")
    if not 1 <= args.digits <= 2000:
        raise MdcertError(f"--digits must be in 1..2000, got {args.digits}")
    if args.decoder_lr is not None and (not np.isfinite(args.decoder_lr) or args.decoder_lr <= 0):
        raise MdcertError(f"--decoder-lr must be finite and > 0, got {args.decoder_lr}")
    if args.seed < 0:
        raise MdcertError(f"--seed must be >= 0, got {args.seed}")
    dev = str(args.device).strip().lower()
    if dev not in ("auto", "cpu", "cuda") and not dev.startswith("cuda:"):
        raise MdcertError(f"unknown device {args.device!r}; use auto, cpu or cuda")
    workers = args.workers
    if workers is None:
        workers = 2 if (os.cpu_count() or 1) >= 2 else 0
    if workers < 0:
        raise MdcertError(f"--workers must be >= 0, got {workers}")
    return {"p": ps, "p_text": _split(args.p, "p"), "steps": steps, "lr": lrs, "workers": workers, "device": dev}


def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise MdcertError(f"output {str(out)!r} exists and is not a directory; choose another -o")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise MdcertError(f"run directory {str(out)!r} exists and is not empty; use --overwrite or another -o")
    if not out.parent.exists():
        raise MdcertError(f"parent directory of {str(out)!r} does not exist; create it first")


# ---------------------------------------------------------------------------------------------- certificates
def _cert_job(job: tuple) -> dict:
    """Certify one SVM (runs in a worker process: imports certify only, never torch)."""
    key, X, y, z, v, alpha, p_text, digits = job
    from certify import AttentionProblem, CertStatus, certify_svm

    problem = AttentionProblem(X, y, z, v)
    t0 = time.perf_counter()
    d = digits
    while True:
        cert = certify_svm(problem, p_text, alpha=list(alpha), digits=d)
        err = cert.direction_error_upper
        if cert.status is not CertStatus.OPTIMAL or (err is not None and err < Fraction(DIRECTION_TOL)) or d >= 480:
            break
        d *= 2
    out = {"key": key, "status": cert.status.value, "digits": d, "seconds": time.perf_counter() - t0,
           "torch_loaded": "torch" in sys.modules,
           "direction": None, "direction_error_upper": None, "certificate": cert.to_json()}
    if cert.status is CertStatus.OPTIMAL:
        out["direction"] = cert.direction_float()
        out["direction_error_upper"] = float(err) if err is not None else None
    return out


class Certifier:
    """Certified reference SVMs, cached by (data hash, alpha, p), solved in a process pool.

    Args:
        problems: the datasets; hashes: their data hashes.
        workers: processes (0: solve in this process when results are asked for).
        digits: initial digits (raised until the direction error is below `DIRECTION_TOL`).
    """

    def __init__(self, problems, hashes, *, workers: int, digits: int) -> None:
        self.problems, self.hashes, self.digits = problems, hashes, digits
        self.jobs: dict[tuple, tuple] = {}
        self.futures: dict[tuple, object] = {}
        self.done: dict[tuple, dict] = {}
        self.requests = 0
        self.opt_keys: list = []
        self.pool = None
        if workers > 0:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def key(self, trial: int, alpha, p: Fraction) -> tuple:
        return (self.hashes[trial], tuple(int(a) for a in alpha), p)

    def submit(self, trial: int, alpha, p: Fraction, *, count: bool = True) -> tuple:
        self.requests += int(count)
        key = self.key(trial, alpha, p)
        if key not in self.jobs:
            pr = self.problems[trial]
            job = (key, pr.X, pr.y, pr.z, pr.v, key[1], f"{p.numerator}/{p.denominator}", self.digits)
            self.jobs[key] = job
            if self.pool is not None:
                self.futures[key] = self.pool.submit(_cert_job, job)
        return key

    def results(self) -> dict[tuple, dict]:
        for key, job in self.jobs.items():
            if key not in self.done:
                self.done[key] = self.futures[key].result() if key in self.futures else _cert_job(job)
        return self.done

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


# ---------------------------------------------------------------------------------------------- analysis
def _references(cert: Certifier, keys: list, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    res = cert.results()
    ref = np.full((len(keys),) + shape, np.nan)
    status = np.empty(len(keys), dtype=object)
    err = np.full(len(keys), np.nan)
    for i, k in enumerate(keys):
        if k is None:
            status[i] = "tie"
            continue
        r = res[k]
        status[i] = r["status"]
        if r["direction"] is not None:
            e = r["direction_error_upper"]
            err[i] = np.nan if e is None else e
            if e is not None and e < DIRECTION_TOL:
                ref[i] = r["direction"]
            else:
                status[i] = "direction_error_too_large"
    return ref, status.astype(str), err


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


def _measure_against_svms(certifier: Certifier, res, trial: np.ndarray, p_rows: list, ps: list, *, cross: bool,
                          d: int) -> tuple[dict, dict]:
    """Certify every trajectory's final-attention alpha (own p; all q with ``cross``) and measure
    ``D_psi(Wbar_mm, Wbar(k))`` on the recorded iterates; returns (arrays, certificate summary)."""
    from experiments.paths import directional_bregman

    B = len(p_rows)
    alpha_final = res.final_alpha()
    fin_keys = [certifier.submit(int(trial[b]), alpha_final[b], p_rows[b]) for b in range(B)]
    cross_keys = [[certifier.submit(int(trial[b]), alpha_final[b], q) for q in ps] for b in range(B)] if cross else []
    opt_keys = certifier.opt_keys
    certs = certifier.results()
    ref, svm_status, dir_err = _references(certifier, fin_keys, (d, d))
    ref_opt, opt_status, opt_err = _references(certifier, opt_keys, (d, d))
    arrays = {"bregman": directional_bregman(res.W, res.record_steps, ref, p_rows),
              "bregman_opt": directional_bregman(res.W, res.record_steps, ref_opt, p_rows),
              "W_mm": ref, "svm_status": svm_status, "direction_error_upper": dir_err, "W_mm_opt": ref_opt,
              "svm_opt_status": opt_status, "direction_error_upper_opt": opt_err}
    if cross:
        grid = np.full((B, len(ps), res.W.shape[1]), np.nan)
        status = np.empty((B, len(ps)), dtype=object)
        for qi in range(len(ps)):
            refq, stq, _ = _references(certifier, [ck[qi] for ck in cross_keys], (d, d))
            grid[:, qi] = directional_bregman(res.W, res.record_steps, refq, p_rows)
            status[:, qi] = stq
        arrays.update(cross=grid, cross_status=status.astype(str), cross_q=np.array([float(q) for q in ps]))
    errs = [r["direction_error_upper"] for r in certs.values() if r["direction_error_upper"] is not None]
    summary = {
        "requests": certifier.requests, "unique": len(certs),
        "status_counts": {s: sum(r["status"] == s for r in certs.values()) for s in sorted({r["status"] for r in certs.values()})},
        "direction_error_upper_max": max(errs) if errs else None,
        "direction_error_required": DIRECTION_TOL,
        "digits_max": max(r["digits"] for r in certs.values()) if certs else None,
        "solve_seconds_total": sum(r["seconds"] for r in certs.values()),
    }
    return arrays, summary


def _per_p_entry(res, arrays: dict, *, sel: np.ndarray, p: Fraction, p_text: str, lr: float, steps: int, args,
                 ps: list, alpha_final: np.ndarray, alpha_opt: np.ndarray) -> dict:
    """The summary of one (p, lr): final Bregman statistics, rate fits, norm growth, cross grid."""
    from experiments.rates import fit_norm_growth, fit_rates

    def tail_fit(k, c):
        return fit_rates(k, c, tail_fraction=args.tail)

    def norm_fit(k, c):
        return fit_norm_growth(k, c, tail_fraction=args.tail)

    steps_row = res.record_steps[sel[0]]
    entry = {"p": float(p), "p_exact": f"{p.numerator}/{p.denominator}", "p_text": p_text,
             "lr": lr, "steps": int(steps), "trials": int(args.trials), "inits": int(args.inits),
             "trajectories": int(sel.size),
             "status_counts": {s: int(np.sum(res.status[sel] == s)) for s in sorted(set(res.status[sel]))},
             "alpha_final_is_opt": int(np.sum(np.all(alpha_final[sel] == alpha_opt[sel], axis=1))),
             "loss_final_mean": _stats(_final_values(res.loss[sel]))[0],
             "norm_final_mean": _stats(_final_values(res.norm_p[sel]))[0],
             "norm_fit": _rate_json(steps_row, res.norm_p[sel], norm_fit)}
    if "bregman" not in arrays:
        entry.update(bregman_final_mean=None, bregman_final_std=None, rate_fit=None)
        return entry
    m, s, c = _stats(_final_values(arrays["bregman"][sel]))
    mo, so, co = _stats(_final_values(arrays["bregman_opt"][sel]))
    st = arrays["svm_status"][sel]
    err = arrays["direction_error_upper"][sel]
    entry.update(bregman_final_mean=m, bregman_final_std=s, bregman_trajectories=c,
                 bregman_final_opt_mean=mo, bregman_final_opt_std=so, bregman_opt_trajectories=co,
                 svm_status_counts={k: int(np.sum(st == k)) for k in sorted(set(st))},
                 direction_error_upper_max=float(np.nanmax(err)) if np.any(np.isfinite(err)) else None,
                 rate_fit=_rate_json(steps_row, arrays["bregman"][sel], tail_fit),
                 rate_fit_two_decades=_rate_json(steps_row, arrays["bregman"][sel], fit_rates),
                 rate_fit_opt=_rate_json(steps_row, arrays["bregman_opt"][sel], tail_fit))
    if "cross" in arrays:
        cm = [_stats(_final_values(arrays["cross"][sel, qi])) for qi in range(len(ps))]
        entry["cross"] = {"q": [float(q) for q in ps], "bregman_final_mean": [x[0] for x in cm],
                          "bregman_final_std": [x[1] for x in cm], "trajectories": [x[2] for x in cm]}
    return entry


# ---------------------------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> int:
    cfg = parse_config(args)
    out = Path(args.out)
    _prepare_out(out, args.overwrite)
    t_start = time.perf_counter()

    import torch

    from certify import synthetic_problem
    from experiments.paths import resolve_device, run_paths

    device = resolve_device(cfg["device"])
    ps, steps_p, lrs = cfg["p"], cfg["steps"], cfg["lr"]
    problems = [synthetic_problem(n=args.n, T=args.T, d=args.d, seed=1_000_000 * args.seed + t)
                for t in range(args.trials)]
    hashes = [pr.data_hash() for pr in problems]
    d = args.d
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    W0_all = torch.randn((args.trials, args.inits, d, d), generator=gen, dtype=torch.float64).numpy()

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
        certifier = Certifier(problems, hashes, workers=cfg["workers"], digits=args.digits)
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
                        dtype=args.dtype, records=args.records,
                        progress={"auto": None, "on": True, "off": False}[args.progress], on_finish=early)
        t_train = res.elapsed_s
        alpha_final = res.final_alpha()
        t_cert0 = time.perf_counter()
        arrays: dict[str, np.ndarray] = {}
        cert_summary = None
        if certifier is not None:
            arrays, cert_summary = _measure_against_svms(certifier, res, trial, [ps[j] for j in p_idx], ps,
                                                         cross=args.cross, d=d)
            cert_summary.update(workers=cfg["workers"], wait_after_training_s=time.perf_counter() - t_cert0)
        t_an0 = time.perf_counter()
        alpha_opt = np.full((B, args.n), -1)
        for b in range(B):
            tk = problems[trial[b]].optimal_indices()
            alpha_opt[b] = tk.indices
        per_p = [_per_p_entry(res, arrays, sel=np.flatnonzero((p_idx == pi) & (lr_idx == li)), p=p,
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
    if res.v is not None:
        arrays["v_rec"] = res.v
        arrays["v_final"] = res.v_final
    summary = {
        "kind": "paths", "format": 1, "argv": sys.argv[1:] if sys.argv else [],
        "config": {"trials": args.trials, "p": [f"{p.numerator}/{p.denominator}" for p in ps], "steps": steps_p,
                   "lr": lrs, "normalize": bool(args.normalize), "inits": args.inits, "seed": args.seed,
                   "train_decoder": bool(args.train_decoder), "decoder_lr": args.decoder_lr, "records": args.records,
                   "n": args.n, "T": args.T, "d": args.d, "cross": bool(args.cross), "certify": not args.no_certify,
                   "tail": args.tail,
                   "data_seed": "1000000*seed + trial", "init": "torch.Generator().manual_seed(seed), N(0,1) float64"},
        "device": res.device, "dtype": res.dtype, "trajectories": B,
        "elapsed_s": None,
        "timings_s": {"train": t_train, "certify_wait_after_training": None if cert_summary is None else cert_summary["wait_after_training_s"],
                      "analysis": t_an},
        "certificates": cert_summary, "float_limits": list(res.notes), "per_p": per_p,
    }
    _write_run(out, summary, arrays, certifier, t_start, args.overwrite)
    s = summary
    print(f"paths: {B} trajectories on {s['device']} in {s['elapsed_s']:.1f}s (training {t_train:.1f}s) -> {out}")
    for e in per_p:
        bm = e.get("bregman_final_mean")
        better = (e.get("rate_fit") or {}).get("better")
        bm_txt = f"{bm:.3e} +- {e['bregman_final_std']:.1e}" if bm is not None else "n/a"
        print(f"  p={e['p_text']} lr={e['lr']} steps={e['steps']}: D_final {bm_txt}, better fit: {better}")
    for note in res.notes:
        print(f"  note: {note}")
    return 0


def _write_run(out: Path, summary: dict, arrays: dict, certifier, t_start: float, overwrite: bool) -> None:
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        with open(tmp / "arrays.npz", "wb") as fh:
            np.savez_compressed(fh, **arrays)
        if certifier is not None:
            with gzip.open(tmp / "certificates.jsonl.gz", "wt") as fh:
                for key, r in certifier.results().items():
                    fh.write(json.dumps({"data_hash": key[0], "alpha": list(key[1]), "p": f"{key[2].numerator}/{key[2].denominator}",
                                         "digits": r["digits"], "certificate": r["certificate"]}) + "\n")
        summary["elapsed_s"] = time.perf_counter() - t_start
        (tmp / "summary.json").write_text(json.dumps(_finite_json(summary), indent=1, default=_json_default,
                                                     allow_nan=False))
        _prepare_out(out, overwrite)
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _finite_json(o):
    """Non-finite floats become None (JSON has no NaN)."""
    if isinstance(o, dict):
        return {k: _finite_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite_json(v) for v in o]
    if isinstance(o, (float, np.floating)):
        return float(o) if np.isfinite(o) else None
    return o


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o) if np.isfinite(o) else None
    if isinstance(o, Fraction):
        return f"{o.numerator}/{o.denominator}"
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
