"""The protocol every study follows: tune each optimizer's step size on validation, then train every
seed with it and analyse the trained models (docs/theory.md section 6.5).

1. Tuning: for each optimizer, one run per step size of its grid (every optimizer's grid has the
   same number of values), seed 0, trained on the training split; the step size with the highest
   final validation accuracy is kept (ties: the first in the grid). A diverged run scores -1.
2. Final runs: for each optimizer and seed ``0 .. seeds-1``, train with the kept step size, then
   measure test accuracy, the weight counts and histograms (`experiments.studies.prune`), the
   pruning results (`experiments.studies.prune`) and, for text, the causal token tests
   (`experiments.studies.causal`). Seed ``s`` gives every optimizer the same initialization, batch
   order and dropout masks, so optimizers are paired by seed.

Every run is a unit of `experiments.studies.runner.StudyContext` keyed by its configuration, so
finished runs are not redone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Setup", "run_protocol", "work"]


@dataclass(frozen=True, eq=False)
class Setup:
    """A study at one model size, as a kind builds it.

    Attributes:
        study: kind name; size: the model size (blocks = heads).
        config: everything that determines a run besides optimizer, step size and seed (model shape,
            data split, epochs, batch): part of every run's key.
        task, train, val, test: the data and its index splits.
        build: ``build(seed)`` -> a fresh model initialised from ``seed``.
        specs: the optimizers; grids: optimizer key -> its step sizes (same length for all).
        seeds: final seeds (``seed_start .. seed_start + seeds - 1``); finetune_steps, sparsities:
            pruning; causal: run the token tests.
        fixed_lr: skip tuning and train every optimizer with this step size (``--lr``: one grid
            point of a sweep, `experiments.sweep.study_kind`).
        prune_sets: set name -> function giving a model's matrices of that set.
        attention: function giving a model's attention matrices (weight counts, histograms).
    """

    study: str
    size: int
    config: dict
    task: object
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    build: Callable[[int], object]
    specs: tuple
    grids: dict
    seeds: int
    epochs: int
    batch: int
    finetune_steps: int
    sparsities: tuple
    causal: bool
    prune_sets: dict
    attention: Callable
    time_limit: int = 512
    fixed_lr: float | None = None
    seed_start: int = 0


def _steps(setup: Setup) -> int:
    return setup.epochs * math.ceil(len(setup.train) / setup.batch)


class _NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int = 1) -> None:
        pass


def _no_bar(total: int, desc: str, *, leave: bool = True) -> _NoBar:
    return _NoBar()


def _train(setup: Setup, spec, lr: float, seed: int, device, bar):
    from experiments.studies.train import train_model

    model = setup.build(seed)
    curves = train_model(model, setup.task, setup.train, spec=spec, lr=lr, epochs=setup.epochs, batch=setup.batch,
                         seed=seed, device=device, val=(setup.task, setup.val), on_step=bar.update)
    return model, curves


def run_protocol(setup: Setup, ctx) -> dict:
    """Tune, train and analyse; returns ``{"tuning": {opt: [records]}, "lr": {opt: lr}, "final": {opt: [records]}}``."""
    from experiments.studies.runner import Unit

    out: dict = {"tuning": {}, "lr": {}, "final": {}, "edge": {}}
    base = {"study": setup.study, "size": setup.size, **setup.config}
    tag = f"{setup.study} size {setup.size}"

    def unit(phase, spec, lr, seed, cfg):
        where = (setup.study, setup.size, phase, spec.key, lr, seed)
        label = f"{phase} {spec.label} " + (f"lr={lr:g}" if phase == "tune" else f"seed {seed}")
        return Unit(cfg, label, lambda: work(setup, phase, spec, lr, seed, ctx.device, ctx.bar), where)

    if setup.fixed_lr is not None:
        for spec in setup.specs:
            out["tuning"][spec.key], out["lr"][spec.key], out["edge"][spec.key] = [], setup.fixed_lr, False
    else:
        units = [unit("tune", spec, lr, 0, {**base, "phase": "tune", "optimizer": spec.key, "p": spec.p, "lr": lr,
                                             "seed": 0})
                 for spec in setup.specs for lr in setup.grids[spec.key]]
        recs = iter(ctx.run_units(units, f"{tag}: tuning"))
        for spec in setup.specs:
            mine = [next(recs) for _ in setup.grids[spec.key]]
            scores = [(-1.0 if r["result"]["diverged"] else (r["result"]["val_acc"] or -1.0)) for r in mine]
            best = int(np.argmax(scores))
            out["tuning"][spec.key] = mine
            out["lr"][spec.key] = setup.grids[spec.key][best]
            out["edge"][spec.key] = best in (0, len(scores) - 1)
    seeds = range(setup.seed_start, setup.seed_start + setup.seeds)
    units = [unit("final", spec, out["lr"][spec.key], seed,
                  {**base, "phase": "final", "optimizer": spec.key, "p": spec.p, "lr": out["lr"][spec.key], "seed": seed,
                   "finetune_steps": setup.finetune_steps, "sparsities": list(setup.sparsities), "causal": setup.causal})
             for spec in setup.specs for seed in seeds]
    recs = iter(ctx.run_units(units, f"{tag}: final runs"))
    for spec in setup.specs:
        out["final"][spec.key] = [next(recs) for _ in seeds]
    return out


def work(setup: Setup, phase: str, spec, lr: float, seed: int, device, bar=_no_bar) -> dict:
    """The result of one run: a tuning run (``phase == "tune"``) or a final run with its analyses."""
    if phase == "tune":
        with bar(_steps(setup), f"  {spec.label} lr={lr:g}", leave=False) as b:
            _, curves = _train(setup, spec, lr, seed, device, b)
        return {"val_acc": curves.val_acc[-1] if curves.val_acc else None, "curves": curves.as_dict(),
                "diverged": curves.diverged}
    return _final_work(setup, spec, lr, seed, device, bar)


def _final_work(setup: Setup, spec, lr: float, seed: int, device, bar) -> dict:
    from experiments.studies.prune import PruneSetting, prune_and_measure
    from experiments.studies.train import evaluate
    from experiments.studies.prune import histogram, threshold_counts

    total = _steps(setup) + setup.finetune_steps * len(setup.prune_sets) * len(setup.sparsities)
    with bar(total, f"  {spec.label} seed {seed}", leave=False) as b:
        model, curves = _train(setup, spec, lr, seed, device, b)
        res: dict = {"curves": curves.as_dict(), "diverged": curves.diverged}
        if curves.diverged:
            res["test_acc"] = None
            return res
        res["test_acc"] = evaluate(model, setup.task, setup.test, device=device)
        res["val_acc"] = curves.val_acc[-1] if curves.val_acc else None
        att = setup.attention(model)
        res["weights"] = {"threshold": threshold_counts(att), "histogram": histogram(att),
                          "histogram_all": histogram(setup.prune_sets["all"](model))}
        if setup.causal:
            from experiments.studies.causal import causal_test

            res["causal"] = causal_test(model, setup.task, setup.test, seed=seed, device=device)
        if setup.sparsities:
            res["prune"] = prune_and_measure(model, sets=setup.prune_sets, sparsities=setup.sparsities,
                                             task=setup.task, train_idx=setup.train, test_idx=setup.test,
                                             setting=PruneSetting(spec, lr, setup.batch, seed, setup.finetune_steps),
                                             device=device, time_idx=setup.test[:setup.time_limit],
                                             on_step=b.update)
    return res
