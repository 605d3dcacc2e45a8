"""The work of ``mdcert paths``: `run` trains the grid p x lr x dataset x init, certifies the reference
SVMs and measures the Bregman curves; its `Result` writes the run directory and gives the terminal
lines (docs/theory.md sections 6.2 and 6.3)."""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from certify.exact import format_exact, parse_fraction
from experiments.commands.paths.options import Config
from experiments.runtime.outputs import check_output_dir, run_dir
from experiments.paths.config import check_sizes
from experiments.paths.text import per_p_lines
from experiments.paths.svm_cache import Certifier
from experiments.runtime.terminal import wrap, wrap_lines

__all__ = ["Result", "run"]


@dataclass
class Result:
    """A finished ``mdcert paths`` run, not yet written.

    Attributes:
        summary: the content of ``summary.json`` (``elapsed_s`` is set by `write`).
        arrays: the arrays of ``arrays.npz``.
        certificates: the lines of ``certificates.jsonl.gz`` (None: ``--no-certify``).
        out: the run directory (the one `write` wrote, else the configured one).
        overwrite: whether `write` may replace an existing run directory of kind ``paths``.
        t_start: `time.perf_counter` when the work started (``elapsed_s`` counts from it).
        exit_code: 0 (a finished run).
    """

    summary: dict
    arrays: dict
    certificates: list[dict] | None
    out: Path
    overwrite: bool
    t_start: float
    exit_code: int = 0

    def write(self, out: str | Path) -> None:
        """Write ``arrays.npz``, ``certificates.jsonl.gz`` and ``summary.json`` into a run directory
        of kind ``paths`` at ``out`` (a temporary directory renamed when complete)."""
        from certify.io.jsonenc import dumps

        with run_dir(Path(out), kind="paths", overwrite=self.overwrite) as tmp:
            with open(tmp / "arrays.npz", "wb") as fh:
                np.savez_compressed(fh, **self.arrays)
            if self.certificates is not None:
                with gzip.open(tmp / "certificates.jsonl.gz", "wt") as fh:
                    for line in self.certificates:
                        fh.write(json.dumps(line) + "\n")
            self.summary["elapsed_s"] = time.perf_counter() - self.t_start
            (tmp / "summary.json").write_text(dumps(self.summary, indent=1))
        self.out = Path(out)

    def lines(self, width: int) -> list[str]:
        """The terminal summary: the run, then per (p, lr) the endings, D and rates against the SVM
        each is measured with (`experiments.paths.text.per_p_lines`), wrapped to ``width``."""
        s = self.summary
        elapsed = (
            s["elapsed_s"] if s["elapsed_s"] is not None else time.perf_counter() - self.t_start
        )
        out = [
            f"paths: {s['trajectories']} trajectories on {s['device']} in {elapsed:.1f}s "
            f"(training {s['timings_s']['train']:.1f}s) -> {self.out}"
        ]
        for e in s["per_p"]:
            head = f"p={format_exact(parse_fraction(e['p_exact']))} lr={e['lr']:g} steps={e['steps']}: "
            body = per_p_lines(e)
            out += wrap(head + body[0], width, first="  ", indent="      ")
            out += wrap_lines(["    " + ln for ln in body[1:]], width)
        if s["float_limits"]:
            out += wrap_lines([f"  note: {note}" for note in s["float_limits"]], width)
        return out


def run(config: Config):
    """Read the inputs, check their sizes and the run directory, then train every path, certify the
    reference SVMs (in worker processes, while the paths still run) and analyse the curves. A
    `experiments.commands.paths.linear.LinearConfig` (a classification problem) runs the p-GD paths
    of ``mdcert pgd`` instead and returns its `LinearResult`."""
    from experiments.commands.paths.linear import LinearConfig, run_linear

    if isinstance(config, LinearConfig):
        return run_linear(config)
    from experiments.paths.inputs import build, check_init_range, resolve_inputs

    inputs = resolve_inputs(
        problems=config.problems,
        init=config.init,
        init_std=config.init_std,
        seed=config.seed,
        trials=config.trials,
        n=config.n,
        T=config.T,
        d=config.d,
        inits=config.inits,
    )
    if config.problems or config.init is not None:  # sizes read from the files
        check_sizes(
            trials=inputs.trials,
            inits=inputs.inits,
            n=inputs.n,
            T=inputs.T,
            d=inputs.d,
            records=config.records,
            runs=len(config.p) * len(config.lr),
        )
    if inputs.W0 is not None:
        check_init_range(inputs.W0, config.p, config.init)
    check_output_dir(config.out, option="-o", overwrite=config.overwrite, kind="paths")
    t_start = time.perf_counter()

    from experiments.paths.engine import resolve_device, run_paths
    from experiments.paths.summary import measure_against_svms, per_p_entry

    device = resolve_device(config.device)
    ps, steps_p, lrs = config.p, config.steps, config.lr
    inputs = build(inputs, seed=config.seed)
    problems, W0_all = inputs.problems, inputs.W0
    hashes = [
        pr.data_hash() for pr in inputs.sources
    ]  # certified as the files hold them (padding: no bit)

    # the grid: p x lr x trial x init
    rows = [
        (pi, li, t, i)
        for pi in range(len(ps))
        for li in range(len(lrs))
        for t in range(inputs.trials)
        for i in range(inputs.inits)
    ]
    p_idx, lr_idx, trial, init = (np.array([r[j] for r in rows]) for j in range(4))
    B = len(rows)

    certifier = None
    certificates = None
    if config.certify:
        certifier = Certifier(inputs.sources, hashes, workers=config.workers, digits=config.digits)
        certifier.progress = config.show_progress
        tokens = [pr.optimal_indices() for pr in problems]
        opt_keys: list = [None] * B
        for b in range(B):  # solved while the paths run
            tk = tokens[trial[b]]
            if tk.unique:
                opt_keys[b] = certifier.submit(int(trial[b]), tk.indices, ps[p_idx[b]])
        certifier.opt_keys = opt_keys
    try:

        def early(ids, _W, att) -> None:  # certify finished trajectories while others run
            if certifier is None:
                return
            for b, alpha in zip(ids, np.argmax(att, axis=-1)):
                certifier.submit(int(trial[b]), alpha, ps[p_idx[b]], count=False)
                if config.cross:
                    for q in ps:
                        certifier.submit(int(trial[b]), alpha, q, count=False)

        res = run_paths(
            problems,
            data_index=trial,
            p=[ps[j] for j in p_idx],
            lr=[lrs[j] for j in lr_idx],
            steps=[steps_p[j] for j in p_idx],
            W0=W0_all[trial, init],
            normalize=config.normalize,
            train_decoder=config.train_decoder,
            decoder_lr=config.decoder_lr,
            device=device,
            dtype=config.dtype,
            records=config.records,
            spacing=config.spacing,
            progress=config.show_progress,
            on_finish=early,
        )
        t_train = res.elapsed_s
        alpha_final = res.final_alpha()
        t_cert0 = time.perf_counter()
        arrays: dict[str, np.ndarray] = {}
        cert_summary = None
        if certifier is not None:
            arrays, cert_summary = measure_against_svms(
                certifier,
                res,
                trial,
                [ps[j] for j in p_idx],
                list(ps),
                cross=config.cross,
                d=inputs.d,
            )
            cert_summary.update(
                workers=config.workers, wait_after_training_s=time.perf_counter() - t_cert0
            )
            certificates = [
                {
                    "data_hash": key[0],
                    "alpha": list(key[1]),
                    "p": f"{key[2].numerator}/{key[2].denominator}",
                    "digits": r["digits"],
                    "certificate": r["certificate"],
                }
                for key, r in certifier.results().items()
            ]
        t_an0 = time.perf_counter()
        alpha_opt = np.full((B, inputs.n), -1)
        for b in range(B):
            alpha_opt[b] = problems[trial[b]].optimal_indices().indices
        per_p = [
            per_p_entry(
                res,
                arrays,
                sel=np.flatnonzero((p_idx == pi) & (lr_idx == li)),
                p=p,
                p_text=config.p_text[pi],
                lr=lr,
                steps=steps_p[pi],
                trials=inputs.trials,
                inits=inputs.inits,
                tail=config.tail,
                average=config.average,
                ps=list(ps),
                alpha_final=alpha_final,
                alpha_opt=alpha_opt,
            )
            for pi, p in enumerate(ps)
            for li, lr in enumerate(lrs)
        ]
        t_an = time.perf_counter() - t_an0
    finally:
        if certifier is not None:
            certifier.close()

    arrays.update(
        p=np.array([float(ps[j]) for j in p_idx]),
        p_exact=np.array([f"{ps[j].numerator}/{ps[j].denominator}" for j in p_idx]),
        lr=res.lr,
        steps=res.steps,
        trial=trial,
        init=init,
        record_steps=res.record_steps,
        W=res.W,
        loss=res.loss,
        norm_p=res.norm_p,
        top_attention=res.top_attention,
        W_final=res.W_final,
        attention_final=res.attention_final,
        status=res.status,
        stop_step=res.stop_step,
        saturated_step=res.saturated_step,
        alpha_final=alpha_final,
        alpha_opt=alpha_opt,
        W0=W0_all[trial, init],
        X=np.stack([pr.X for pr in problems]),
        y=np.stack([pr.y for pr in problems]),
        z=np.stack([pr.z for pr in problems]),
        v=np.stack([pr.v for pr in problems]),
    )
    if any(pr.lengths is not None for pr in problems):
        arrays["lengths"] = np.stack([pr.valid_lengths for pr in problems])
    if res.v is not None:
        arrays["v_rec"] = res.v
        arrays["v_final"] = res.v_final
    summary = {
        "kind": "paths",
        "format": 1,
        "argv": list(config.argv),
        "config": {
            "trials": inputs.trials,
            "p": [f"{p.numerator}/{p.denominator}" for p in ps],
            "steps": list(steps_p),
            "lr": list(lrs),
            "normalize": config.normalize,
            "inits": inputs.inits,
            "seed": config.seed,
            "train_decoder": config.train_decoder,
            "decoder_lr": config.decoder_lr,
            "records": config.records,
            "spacing": config.spacing,
            "n": inputs.n,
            "T": inputs.T,
            "d": inputs.d,
            "cross": config.cross,
            "certify": config.certify,
            "tail": config.tail,
            "average": config.average,
            "data_seed": "1000000*seed + trial" if inputs.problem_records is None else None,
            "init": inputs.init_record,
            "problems": inputs.problem_records,
        },
        "device": res.device,
        "dtype": res.dtype,
        "trajectories": B,
        "elapsed_s": None,
        "timings_s": {
            "train": t_train,
            "certify_wait_after_training": None
            if cert_summary is None
            else cert_summary["wait_after_training_s"],
            "analysis": t_an,
        },
        "certificates": cert_summary,
        "float_limits": list(res.notes),
        "per_p": per_p,
    }
    return Result(
        summary=summary,
        arrays=arrays,
        certificates=certificates,
        out=Path(config.out),
        overwrite=config.overwrite,
        t_start=t_start,
    )
