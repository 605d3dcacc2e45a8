"""``mdcert study vision``: a small ViT on scikit-learn's digits (docs/theory.md section 6.5).

Data: the 1,797 8x8 digit images that scikit-learn ships (no download), scaled to [0, 1]; a fixed
split (``numpy`` seed 0): 20% test, 10% of the rest validation, the remainder training. Model:
`VisionTransformer` with 2x2 patches (16 patches and a class token), blocks = heads = ``--size``
(default 4), width 32, dropout 0.1, torch's default initialization of the Linear layers (with
N(0, 0.02^2) weights gradient descent did not leave chance accuracy in 30 epochs); the paper used patch 4, width 512, 6 blocks, 8 heads on larger
images. Optimizers: `LpMirrorDescent` with p in {1.1, 1.5, 2, 3} and Adam.
"""

from __future__ import annotations

import argparse
from functools import lru_cache

from certify.errors import MdcertError

from experiments.studies.kinds import StudyKind

__all__ = ["STUDY", "GRIDS", "load_digits_task", "configure", "build_setups"]

#: step-size grids, three values per optimizer, log-spaced by ~3
GRIDS = {
    "p1.1": (0.1, 0.3, 1.0),
    "p1.5": (0.1, 0.3, 1.0),
    "p2": (0.1, 0.3, 1.0),
    "p3": (0.01, 0.03, 0.1),
    "adam": (1e-3, 3e-3, 1e-2),
}
QUICK_GRIDS = {k: v[1:] for k, v in GRIDS.items()}
SPLIT_SEED = 0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--size", default="4", help="model size (blocks = heads), comma-separated (default 4)"
    )
    parser.add_argument(
        "--optimizers", default="1.1,1.5,2,3,adam", help="optimizers (default 1.1,1.5,2,3,adam)"
    )
    parser.add_argument(
        "--width", type=int, default=None, help="model width, a multiple of every size (default 32)"
    )
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout (default 0.1)")
    parser.add_argument(
        "--epochs", type=int, default=None, help="epochs per run (default 60; --quick 3)"
    )
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    parser.add_argument(
        "--finetune-steps",
        type=int,
        default=None,
        help="masked fine-tune steps after pruning (default 40)",
    )


@lru_cache(maxsize=1)
def load_digits_task():
    """``(ImageTask, train, val, test)`` of scikit-learn's digits with the fixed split."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits

    from experiments.studies.train import ImageTask

    d = load_digits()
    images = torch.as_tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    labels = torch.as_tensor(d.target, dtype=torch.int64)
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(labels))
    ntest = int(round(0.2 * len(labels)))
    test, rest = perm[:ntest], perm[ntest:]
    nval = int(round(0.1 * len(rest)))
    return ImageTask(images, labels), np.sort(rest[nval:]), np.sort(rest[:nval]), np.sort(test)


def build_setups(args) -> list:
    from experiments.studies.kinds import parse_optimizers, parse_sizes
    from experiments.studies.models import (
        EncoderConfig,
        VisionTransformer,
        attention_matrices,
        weight_matrices,
    )
    from experiments.studies.protocol import Setup
    from experiments.studies.prune import SPARSITIES

    quick = bool(args.quick)
    sizes = parse_sizes(args.size, allowed=(1, 2, 3, 4, 6, 8))
    specs = parse_optimizers(args.optimizers, GRIDS)
    width = 16 if quick and args.width is None else (args.width or 32)
    epochs = args.epochs if args.epochs is not None else (3 if quick else 60)
    ft = args.finetune_steps if args.finetune_steps is not None else (5 if quick else 40)
    if (
        not 1 <= width <= 4096
        or not 1 <= epochs <= 10000
        or not 0 <= ft <= 10**6
        or not 1 <= args.batch <= 65536
    ):
        raise MdcertError(
            "--width, --epochs, --batch or --finetune-steps is out of range; give positive integers"
        )
    if not 0 <= args.dropout < 1:
        raise MdcertError(f"--dropout {args.dropout}: give a number in [0, 1)")
    for s in sizes:
        if width % s:
            raise MdcertError(
                f"--width {width} is not a multiple of size {s} (heads); choose a multiple such as {s * 8}"
            )
    task, train, val, test = load_digits_task()
    grids = {s.key: list((QUICK_GRIDS if quick else GRIDS)[s.key]) for s in specs}
    setups = []
    for size in sizes:
        cfg = EncoderConfig(blocks=size, heads=size, width=width, max_len=17, dropout=args.dropout)
        config = {
            "model": cfg.__dict__,
            "patch": 2,
            "epochs": epochs,
            "batch": args.batch,
            "train": len(train),
            "val": len(val),
            "test": len(test),
            "split": "digits seed 0",
            "grid": grids,
            "init": "torch default",
        }
        setups.append(
            Setup(
                study="vision",
                size=size,
                config=config,
                task=task,
                train=train,
                val=val,
                test=test,
                build=lambda seed, cfg=cfg: VisionTransformer(cfg, image=8, patch=2, seed=seed),
                specs=tuple(specs),
                grids=grids,
                seeds=args.seeds,
                epochs=epochs,
                batch=args.batch,
                finetune_steps=ft,
                sparsities=SPARSITIES,
                causal=False,
                prune_sets={"attention": attention_matrices, "all": weight_matrices},
                attention=attention_matrices,
                fixed_lr=args.lr,
                seed_start=args.seed_start,
            )
        )
    return setups


STUDY = StudyKind("vision", "a small ViT on scikit-learn's digits", configure, build_setups)
