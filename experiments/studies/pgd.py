"""``mdcert study pgd``: p-GD on a small MLP on scikit-learn's digits, measured (docs/theory.md section 7.4).

The deep-net claims of arXiv 2205.12808 about p-GD (mirror descent with ``psi = ||w||_p^p / p``,
`LpMirrorDescent`), measured offline: test accuracy against p with intervals and the chance
baseline, the weights' sparsity against p, the certified l_p max-margin of the last-layer features,
and the time per training step against ``torch.optim.SGD``. Nothing of this study proves a property
of the training; the margins are certified for the features the trained networks produce.

Data and split: `experiments.studies.vision.load_digits_task` (the vision study's: 20% test, 10% of
the rest validation, ``numpy`` seed 0). Model: `experiments.studies.pgdnet.DigitsMLP` (``--width``
64: 64 -> 64 -> 32 -> 10). Protocol (like `experiments.studies.protocol`): each p's step size is tuned
on validation (seed 0, one run per value of its grid, best final validation accuracy, a diverged run
scores -1; ``--quick`` (one value per p) and ``--lr`` are not tuned), then seeds ``seed_start ..`` train with it.
Every run, timing and certificate is one record of the study directory (`experiments.studies.runner`),
stored as it finishes, so an interrupted study resumes. Runs are in-process (``--workers`` unused).
``--save-features`` also writes, for each final run trained now, the last hidden layer of its train
and test images and the head's weights to ``DIR/features/KEY.npz``
(`experiments.studies.pgdnet.save_features`; ``mdcert data features`` reads them as a
classification problem, `experiments.data.features`).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

import numpy as np

from certify.errors import MdcertError

from experiments.studies.kinds import StudyKind

__all__ = ["STUDY", "GRIDS", "PgdConfig", "configure", "build_setups", "run", "chance_baseline"]

#: step-size grids, three values per p, log-spaced by ~3, placed from pilot runs (width 64, 15 epochs,
#: seed 0: p = 1.1 overflowed float32 at 0.3, p = 10 stayed at chance from 1e-5 on: its mirror map |w|^9
#: makes the useful step tiny) and moved once after a default run picked an edge (p = 3: 0.1 of
#: 0.01..0.1; p = 10: 1e-9 of 1e-9..1e-7)
GRIDS = {
    "p1.1": (0.03, 0.1, 0.3),
    "p1.5": (0.1, 0.3, 1.0),
    "p2": (0.1, 0.3, 1.0),
    "p3": (0.03, 0.1, 0.3),
    "p10": (3e-10, 1e-9, 3e-9),
}
#: ``--quick``: no tuning, one step size per p (the pilot runs' best at 10-15 epochs)
QUICK_GRIDS = {"p1.1": (0.1,), "p1.5": (0.3,), "p2": (0.3,), "p3": (0.03,), "p10": (1e-8,)}
SGD_LR = 0.1


@dataclass(frozen=True)
class PgdConfig:
    """Everything that defines the study's runs (recorded in summary.json)."""

    width: int
    epochs: int
    batch: int
    optimizers: tuple[str, ...]
    grids: dict
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
    parser.add_argument(
        "--optimizers", default="1.1,1.5,2,3,10", help="exponents p (default 1.1,1.5,2,3,10)"
    )
    parser.add_argument(
        "--width",
        type=int,
        default=None,
        help="first hidden layer (second: half); default 64, --quick 32",
    )
    parser.add_argument(
        "--epochs", type=int, default=None, help="epochs per run (default 40; --quick 10)"
    )
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
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
        help="also write each final run's last-hidden-layer features of the train and test images "
        "to DIR/features/KEY.npz (read by 'mdcert data features'); runs reused are not rewritten",
    )


def build_setups(args) -> list[PgdConfig]:
    """Validate the options (one-line `MdcertError`) and load the data; returns ``[PgdConfig]``."""
    from experiments.studies.kinds import parse_optimizers
    from experiments.studies.train import parse_optimizer
    from experiments.studies.vision import load_digits_task

    quick = bool(args.quick)
    specs = [parse_optimizer(s) for s in str(args.optimizers).split(",")]
    if any(s.name != "md" for s in specs):
        raise MdcertError(
            f"--optimizers {args.optimizers!r}: this study runs p-GD only; give exponents like 1.1,2,3"
        )
    grids = QUICK_GRIDS if quick else GRIDS
    if args.lr is None:
        parse_optimizers(args.optimizers, grids)
    width = args.width if args.width is not None else (32 if quick else 64)
    epochs = args.epochs if args.epochs is not None else (10 if quick else 40)
    cert_points = args.cert_points if args.cert_points is not None else (100 if quick else 300)
    cert_seeds = args.cert_seeds if args.cert_seeds is not None else (1 if quick else args.seeds)
    repeats = args.timing_repeats if args.timing_repeats is not None else (10 if quick else 50)
    if not 2 <= width <= 4096 or not 1 <= epochs <= 10000 or not 1 <= args.batch <= 65536:
        raise MdcertError(
            "--width, --epochs or --batch is out of range; give integers (width >= 2)"
        )
    if not 20 <= cert_points <= 5000 or not 0 <= cert_seeds <= 1000 or not 1 <= repeats <= 10**5:
        raise MdcertError(
            "--cert-points (20..5000), --cert-seeds (0..1000) or --timing-repeats (>= 1) is out of range"
        )
    if not 0 < args.cert_time_limit <= 3600:
        raise MdcertError(f"--cert-time-limit {args.cert_time_limit}: give seconds in (0, 3600]")
    task, train, _, _ = load_digits_task()
    if cert_points > len(train):
        raise MdcertError(
            f"--cert-points {cert_points}: the training split has only {len(train)} points"
        )
    keys = tuple(s.key for s in specs)
    return [
        PgdConfig(
            width=width,
            epochs=epochs,
            batch=args.batch,
            optimizers=keys,
            grids={k: list(grids[k]) if args.lr is None else [args.lr] for k in keys},
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


def chance_baseline(labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> dict:
    """Test accuracy of always predicting the most frequent training label (the majority-class baseline)."""
    counts = np.bincount(labels[train], minlength=10)
    k = int(counts.argmax())
    return {
        "class": k,
        "test_acc": float((labels[test] == k).mean()),
        "rule": "most frequent training label",
    }


def _cert_index(train: np.ndarray, n: int) -> np.ndarray:
    return np.sort(np.random.default_rng(0).permutation(train)[:n])


def _work(cfg: PgdConfig, unit: dict, device, features_to=None) -> dict:
    import torch

    from experiments.studies.pgdnet import DigitsMLP, feature_margin, step_times, weight_stats
    from experiments.studies.train import OptimizerSpec, evaluate, train_model
    from experiments.studies.vision import load_digits_task

    task, train, val, test = load_digits_task()
    spec = OptimizerSpec("md", unit["p"])
    if unit["phase"] == "timing":
        x, y = task.batch(torch.as_tensor(train[: cfg.batch]), device)
        return step_times(
            lambda: DigitsMLP(cfg.width, seed=unit["seed"]).to(device),
            (x[0], y),
            p=unit["p"],
            lr=unit["lr"],
            sgd_lr=SGD_LR,
            repeats=cfg.timing_repeats,
        )
    model = DigitsMLP(cfg.width, seed=unit["seed"])
    curves = train_model(
        model,
        task,
        train,
        spec=spec,
        lr=unit["lr"],
        epochs=cfg.epochs,
        batch=cfg.batch,
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


def run(args, ctx) -> dict:
    """Tuning, final runs (with weights and certified margins), timing, then the report."""
    from experiments.studies.pgdreport import write_report
    from experiments.studies.vision import load_digits_task

    cfg = build_setups(args)[0]
    task, train, val, test = load_digits_task()
    base = {
        "study": "pgd",
        "model": f"DigitsMLP width {cfg.width}",
        "epochs": cfg.epochs,
        "batch": cfg.batch,
        "split": "digits seed 0",
        "train": len(train),
        "val": len(val),
        "test": len(test),
    }
    p_of = {k: k[1:] for k in cfg.optimizers}
    tune = (
        [(k, lr) for k in cfg.optimizers for lr in cfg.grids[k]]
        if len(cfg.grids[cfg.optimizers[0]]) > 1
        else []
    )
    seeds = list(range(cfg.seed_start, cfg.seed_start + cfg.seeds))
    total = len(tune) + len(cfg.optimizers) * (len(seeds) + 1)
    res: dict = {
        "tuning": {k: [] for k in cfg.optimizers},
        "lr": {},
        "edge": {},
        "final": {},
        "timing": {},
    }

    with ctx.bar(total, "pgd study") as bar:
        save = bool(getattr(args, "save_features", False))

        def unit(config: dict, label: str) -> dict:
            from experiments.studies.runner import run_key

            final = save and config["phase"] == "final"
            to = ctx.root / "features" / f"{run_key(config)}.npz" if final else None
            rec = ctx.run_unit(config, lambda c: _work(cfg, c, ctx.device, to), label=label)
            bar.update(1)
            return rec

        for k, lr in tune:
            res["tuning"][k].append(
                unit(
                    {**base, "phase": "tune", "p": p_of[k], "lr": lr, "seed": 0},
                    f"tune p={p_of[k]} lr={lr:g}",
                )
            )
        for k in cfg.optimizers:
            recs = res["tuning"][k]
            if recs:
                scores = [
                    -1.0 if r["result"]["diverged"] else (r["result"]["val_acc"] or -1.0)
                    for r in recs
                ]
                best = int(np.argmax(scores))
                res["lr"][k], res["edge"][k] = cfg.grids[k][best], best in (0, len(scores) - 1)
            else:
                res["lr"][k], res["edge"][k] = cfg.grids[k][0], False
        cert = {
            "points": cfg.cert_points,
            "digits": cfg.cert_digits,
            "time_limit": cfg.cert_time_limit,
        }
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
                    f"final p={p_of[k]} seed {s}",
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
                    "device": str(ctx.device),
                },
                f"timing p={p_of[k]}",
            )
    chance = chance_baseline(task.labels.numpy(), train, test)
    return write_report(ctx, asdict(cfg), res, chance)


STUDY = StudyKind(
    "pgd",
    "p-GD (p in 1.1..10) on a small MLP on digits: accuracy, sparsity, certified "
    "feature margins, step time against SGD",
    configure,
    build_setups,
    run,
)
