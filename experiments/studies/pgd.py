"""``mdcert study pgd``: p-GD on small MLPs on scikit-learn's digits and on MiniLM sentence
features of movie-review snippets, measured (docs/theory.md section 7.4).

The deep-net claims of arXiv 2205.12808 about p-GD (mirror descent with ``psi = ||w||_p^p / p``,
`LpMirrorDescent`), measured offline: test accuracy against p with intervals and the majority-class
baseline, the weights' sparsity against p, the certified l_p max-margin of the last-layer features,
and the time per training step against ``torch.optim.SGD``. Nothing of this study proves a property
of the training; the margins are certified for the features the trained networks produce.

Tasks (``--task digits|text|both``, default both; `experiments.studies.pgdtasks`): ``digits``
(`experiments.studies.pgdnet.DigitsMLP` on the vision study's split) and ``text``
(`experiments.studies.pgdnet.TextMLP` on cached MiniLM sentence embeddings of the Rotten Tomatoes
snippets, fresh against rotten). Protocol per task (like `experiments.studies.protocol`): each p's
step size is tuned on validation (seed 0, one run per value of its grid, best final validation
accuracy, a diverged run scores -1; ``--quick`` (one value per p) and ``--lr`` are not tuned), then
seeds ``seed_start ..`` train with it. Every run, timing and certificate is one record of the study
directory (`experiments.studies.runner`), stored as it finishes, and every chunk of the sentence
encoding one record of the embedding cache, so an interrupted study resumes. Runs are in-process
(``--workers`` unused). ``--save-features`` also writes, for each digits final run trained now, the
last hidden layer of its train and test images and the head's weights to ``DIR/features/KEY.npz``
(`experiments.studies.pgdnet.save_features`; ``mdcert data features`` reads them as a
classification problem, `experiments.data.features`); text runs write none.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

import numpy as np

from certify.errors import MdcertError

from experiments.studies.kinds import StudyKind
from experiments.studies.pgdtasks import TaskConfig

__all__ = ["STUDY", "SGD_LR", "PgdConfig", "configure", "build_setups", "run"]

SGD_LR = 0.1


@dataclass(frozen=True)
class PgdConfig:
    """Everything that defines the study's runs (recorded in summary.json)."""

    tasks: tuple[TaskConfig, ...]
    optimizers: tuple[str, ...]
    seeds: int
    seed_start: int
    fixed_lr: float | None
    cert_points: int
    cert_seeds: int
    cert_digits: int
    cert_time_limit: float
    timing_repeats: int
    threads: int
    quick: bool


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.studies.pgdtasks import TASK_CHOICES

    parser.add_argument(
        "--task",
        choices=TASK_CHOICES,
        default="both",
        help="digits (MLP on 8x8 images), text (MLP on MiniLM sentence embeddings of movie-review "
        "snippets) or both (default)",
    )
    parser.add_argument(
        "--optimizers", default="1.1,1.5,2,3,10", help="exponents p (default 1.1,1.5,2,3,10)"
    )
    parser.add_argument(
        "--width",
        type=int,
        default=None,
        help="first hidden layer (digits: second is half); default 64, --quick 32",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="epochs per run (default digits 40, text 20; --quick digits 10, text 20)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="batch size (default digits 64, text 128; --quick 64)",
    )
    parser.add_argument(
        "--snippets",
        type=int,
        default=None,
        help="text: labelled snippets used, a fixed random prefix (default all 12808; --quick 2000)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="text: the sentence-embedding cache (default $MDCERT_CACHE_DIR, else ~/.cache/mdcert)",
    )
    parser.add_argument(
        "--cert-points",
        type=int,
        default=None,
        help="training points whose features are certified (default 300; --quick 100)",
    )
    parser.add_argument(
        "--cert-seeds",
        type=int,
        default=None,
        help="seeds certified per p (default all; --quick 1)",
    )
    parser.add_argument(
        "--cert-time-limit",
        type=float,
        default=30.0,
        help="seconds before a certificate stops refining (default 30)",
    )
    parser.add_argument(
        "--timing-repeats",
        type=int,
        default=None,
        help="interleaved timed steps per optimizer (default 50; --quick 10)",
    )
    parser.add_argument(
        "--save-features",
        action="store_true",
        help="also write each digits final run's last-hidden-layer features of the train and test "
        "images to DIR/features/KEY.npz (read by 'mdcert data features'); runs reused are not rewritten",
    )


def build_setups(args) -> list[PgdConfig]:
    """Validate the options (one-line `MdcertError`) and check the data; returns ``[PgdConfig]``."""
    from experiments.studies.kinds import parse_optimizers
    from experiments.studies.pgdtasks import DEFAULTS, GRIDS, QUICK_GRIDS, task_names, text_size
    from experiments.studies.train import parse_optimizer

    quick = bool(args.quick)
    specs = [parse_optimizer(s) for s in str(args.optimizers).split(",")]
    if any(s.name != "md" for s in specs):
        raise MdcertError(
            f"--optimizers {args.optimizers!r}: this study runs p-GD only; give exponents like 1.1,2,3"
        )
    names = task_names(getattr(args, "task", None) or "both")
    grids = QUICK_GRIDS if quick else GRIDS
    if args.lr is None:
        parse_optimizers(args.optimizers, grids[names[0]])
    cert_points = args.cert_points if args.cert_points is not None else (100 if quick else 300)
    cert_seeds = args.cert_seeds if args.cert_seeds is not None else (1 if quick else args.seeds)
    repeats = args.timing_repeats if args.timing_repeats is not None else (10 if quick else 50)
    if not 20 <= cert_points <= 5000 or not 0 <= cert_seeds <= 1000 or not 1 <= repeats <= 10**5:
        raise MdcertError(
            "--cert-points (20..5000), --cert-seeds (0..1000) or --timing-repeats (>= 1) is out of range"
        )
    if not 0 < args.cert_time_limit <= 3600:
        raise MdcertError(f"--cert-time-limit {args.cert_time_limit}: give seconds in (0, 3600]")
    keys = tuple(s.key for s in specs)
    tasks = []
    for name in names:
        width, epochs, batch, snippets = DEFAULTS[name]["quick" if quick else "full"]
        width = args.width if args.width is not None else width
        epochs = args.epochs if args.epochs is not None else epochs
        batch = args.batch if args.batch is not None else batch
        if not 2 <= width <= 4096 or not 1 <= epochs <= 10000 or not 1 <= batch <= 65536:
            raise MdcertError(
                "--width, --epochs or --batch is out of range; give integers (width >= 2)"
            )
        cache_dir = getattr(args, "cache_dir", None)
        if name == "text":
            given = getattr(args, "snippets", None)
            snippets = text_size(given if given is not None else snippets, cache_dir)
            ntrain = snippets - round(0.2 * snippets)
            ntrain -= round(0.1 * ntrain)
        else:
            from experiments.studies.vision import load_digits_task

            ntrain = len(load_digits_task()[1])
        if cert_points > ntrain:
            raise MdcertError(
                f"--cert-points {cert_points}: the {name} training split has only {ntrain} points"
            )
        tasks.append(
            TaskConfig(
                name=name,
                width=width,
                epochs=epochs,
                batch=batch,
                grids={k: list(grids[name][k]) if args.lr is None else [args.lr] for k in keys},
                snippets=snippets if name == "text" else None,
                cache_dir=None if name == "digits" or cache_dir is None else str(cache_dir),
            )
        )
    return [
        PgdConfig(
            tasks=tuple(tasks),
            optimizers=keys,
            seeds=args.seeds,
            seed_start=args.seed_start,
            fixed_lr=args.lr,
            cert_points=cert_points,
            cert_seeds=min(cert_seeds, args.seeds),
            cert_digits=6,
            cert_time_limit=args.cert_time_limit,
            timing_repeats=repeats,
            threads=args.threads,
            quick=quick,
        )
    ]


def _cert_index(train: np.ndarray, n: int) -> np.ndarray:
    return np.sort(np.random.default_rng(0).permutation(train)[:n])


def _work(cfg: PgdConfig, tc: TaskConfig, unit: dict, device, features_to=None) -> dict:
    import torch

    from experiments.studies.pgdnet import feature_margin, step_times, weight_stats
    from experiments.studies.pgdtasks import build_model, load_task
    from experiments.studies.train import OptimizerSpec, evaluate, train_model

    task, train, val, test, _ = load_task(tc)
    spec = OptimizerSpec("md", unit["p"])
    if unit["phase"] == "timing":
        x, y = task.batch(torch.as_tensor(train[: tc.batch]), device)
        return step_times(
            lambda: build_model(tc, unit["seed"]).to(device),
            (x[0], y),
            p=unit["p"],
            lr=unit["lr"],
            sgd_lr=SGD_LR,
            repeats=cfg.timing_repeats,
        )
    model = build_model(tc, unit["seed"])
    curves = train_model(
        model,
        task,
        train,
        spec=spec,
        lr=unit["lr"],
        epochs=tc.epochs,
        batch=tc.batch,
        seed=unit["seed"],
        device=device,
        val=(task, val),
    )
    res: dict = {
        "curves": curves.as_dict(),
        "diverged": curves.diverged,
        "val_acc": curves.val_acc[-1] if curves.val_acc and not curves.diverged else None,
    }
    if unit["phase"] == "tune" or curves.diverged:
        return {**res, "test_acc": None}
    res["test_acc"] = evaluate(model, task, test, device=device)
    res["train_acc"] = evaluate(model, task, train, device=device)
    res["weights"] = weight_stats(model)
    if unit.get("certify"):
        idx = _cert_index(train, cfg.cert_points)
        res["margin"] = feature_margin(
            model,
            task.images[idx].to(device),
            task.labels[idx].numpy(),
            p=unit["p"],
            digits=cfg.cert_digits,
            time_limit=cfg.cert_time_limit,
        )
    if features_to is not None:
        from experiments.data.provenance import mdcert_version
        from experiments.studies.pgdnet import save_features

        record = {
            "key": features_to.stem,
            "config": unit,
            "test_acc": res["test_acc"],
            "train_acc": res["train_acc"],
            "mdcert_version": mdcert_version(),
        }
        save_features(features_to, model.cpu(), task, {"train": train, "test": test}, record)
    return res


def _tuned(cfg: PgdConfig, tc: TaskConfig) -> int:
    """Tuning runs of a task: every grid value, or none when each grid has one value."""
    grids = [tc.grids[k] for k in cfg.optimizers]
    return sum(map(len, grids)) if len(grids[0]) > 1 else 0


def _units(cfg: PgdConfig, tc: TaskConfig, base: dict, unit, device) -> dict:
    """One task's tuning, final runs (with weights and certified margins) and timing."""
    p_of = {k: k[1:] for k in cfg.optimizers}
    tune = [(k, lr) for k in cfg.optimizers for lr in tc.grids[k]] if _tuned(cfg, tc) else []
    seeds = list(range(cfg.seed_start, cfg.seed_start + cfg.seeds))
    res: dict = {"tuning": {k: [] for k in cfg.optimizers}, "lr": {}, "edge": {}, "final": {}}
    res["timing"] = {}
    pre = "" if tc.name == "digits" else f"{tc.name} "
    for k, lr in tune:
        res["tuning"][k].append(
            unit(
                {**base, "phase": "tune", "p": p_of[k], "lr": lr, "seed": 0},
                f"{pre}tune p={p_of[k]} lr={lr:g}",
            )
        )
    for k in cfg.optimizers:
        recs = res["tuning"][k]
        if recs:
            scores = [
                -1.0 if r["result"]["diverged"] else (r["result"]["val_acc"] or -1.0) for r in recs
            ]
            best = int(np.argmax(scores))
            res["lr"][k], res["edge"][k] = tc.grids[k][best], best in (0, len(scores) - 1)
        else:
            res["lr"][k], res["edge"][k] = tc.grids[k][0], False
    cert = {"points": cfg.cert_points, "digits": cfg.cert_digits, "time_limit": cfg.cert_time_limit}
    for k in cfg.optimizers:
        res["final"][k] = [
            unit(
                {
                    **base,
                    "phase": "final",
                    "p": p_of[k],
                    "lr": res["lr"][k],
                    "seed": s,
                    "certify": cert if s - cfg.seed_start < cfg.cert_seeds else None,
                },
                f"{pre}final p={p_of[k]} seed {s}",
            )
            for s in seeds
        ]
    for k in cfg.optimizers:
        res["timing"][k] = unit(
            {
                **base,
                "phase": "timing",
                "p": p_of[k],
                "lr": res["lr"][k],
                "seed": cfg.seed_start,
                "sgd_lr": SGD_LR,
                "repeats": cfg.timing_repeats,
                "threads": cfg.threads,
                "device": str(device),
            },
            f"{pre}timing p={p_of[k]}",
        )
    return res


def run(args, ctx) -> dict:
    """Per task: the data (text: encoded once, cached), tuning, final runs, timing; then the report."""
    import time

    from experiments.studies.pgdreport import write_report
    from experiments.studies.pgdtasks import chance_baseline, describe, load_task
    from experiments.studies.runner import run_key

    cfg = build_setups(args)[0]
    save = bool(getattr(args, "save_features", False))
    data, res, chance = {}, {}, {}
    for tc in cfg.tasks:
        t0, c0 = time.perf_counter(), time.process_time()
        task, train, val, test, info = load_task(
            tc, progress=ctx.progress is not False, reload=True
        )
        data[tc.name] = {
            **info,
            "train": len(train),
            "val": len(val),
            "test": len(test),
            "load_seconds": time.perf_counter() - t0,
            "load_cpu_seconds": time.process_time() - c0,
        }
        chance[tc.name] = chance_baseline(task.labels.numpy(), train, test)
    total = sum(_tuned(cfg, tc) + len(cfg.optimizers) * (cfg.seeds + 1) for tc in cfg.tasks)
    with ctx.bar(total, "pgd study") as bar:
        for tc in cfg.tasks:
            base = describe(tc, *load_task(tc)[1:])
            features = save and tc.name == "digits"

            def unit(config: dict, label: str, tc=tc, features=features) -> dict:
                final = features and config["phase"] == "final"
                to = ctx.root / "features" / f"{run_key(config)}.npz" if final else None
                rec = ctx.run_unit(config, lambda c: _work(cfg, tc, c, ctx.device, to), label=label)
                bar.update(1)
                return rec

            res[tc.name] = _units(cfg, tc, base, unit, ctx.device)
    return write_report(ctx, asdict(cfg), res, chance, data)


STUDY = StudyKind(
    "pgd",
    "p-GD (p in 1.1..10) on small MLPs on digits and on MiniLM sentence features: accuracy, "
    "sparsity, certified feature margins, step time against SGD",
    configure,
    build_setups,
    run,
)
