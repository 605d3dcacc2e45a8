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

__all__ = ["Setup", "run_protocol", "work", "estimate"]


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
    curves = train_model(
        model,
        setup.task,
        setup.train,
        spec=spec,
        lr=lr,
        epochs=setup.epochs,
        batch=setup.batch,
        seed=seed,
        device=device,
        val=(setup.task, setup.val),
        on_step=bar.update,
    )
    return model, curves


def _base(setup: Setup) -> dict:
    return {"study": setup.study, "size": setup.size, **setup.config}


def _tune_config(setup: Setup, spec, lr: float) -> dict:
    return {
        **_base(setup),
        "phase": "tune",
        "optimizer": spec.key,
        "p": spec.p,
        "lr": lr,
        "seed": 0,
    }


def _final_config(setup: Setup, spec, lr: float, seed: int) -> dict:
    return {
        **_base(setup),
        "phase": "final",
        "optimizer": spec.key,
        "p": spec.p,
        "lr": lr,
        "seed": seed,
        "finetune_steps": setup.finetune_steps,
        "sparsities": list(setup.sparsities),
        "causal": setup.causal,
    }


def _choose(setup: Setup, spec, mine: list) -> tuple[float, bool]:
    """The kept step size of ``spec`` from its tuning records, and whether it is at the grid's edge."""
    scores = [(-1.0 if r["result"]["diverged"] else (r["result"]["val_acc"] or -1.0)) for r in mine]
    best = int(np.argmax(scores))
    return setup.grids[spec.key][best], best in (0, len(scores) - 1)


def _seeds(setup: Setup) -> range:
    return range(setup.seed_start, setup.seed_start + setup.seeds)


def run_protocol(setup: Setup, ctx) -> dict:
    """Tune, train and analyse; returns ``{"tuning": {opt: [records]}, "lr": {opt: lr}, "final": {opt: [records]}}``."""
    from experiments.studies.runner import Unit

    out: dict = {"tuning": {}, "lr": {}, "final": {}, "edge": {}}
    tag = f"{setup.study} size {setup.size}"

    def unit(phase, spec, lr, seed, cfg):
        where = (setup.study, setup.size, phase, spec.key, lr, seed)
        label = f"{phase} {spec.label} " + (f"lr={lr:g}" if phase == "tune" else f"seed {seed}")
        return Unit(
            cfg, label, lambda: work(setup, phase, spec, lr, seed, ctx.device, ctx.bar), where
        )

    if setup.fixed_lr is not None:
        for spec in setup.specs:
            out["tuning"][spec.key], out["lr"][spec.key], out["edge"][spec.key] = (
                [],
                setup.fixed_lr,
                False,
            )
    else:
        units = [
            unit("tune", spec, lr, 0, _tune_config(setup, spec, lr))
            for spec in setup.specs
            for lr in setup.grids[spec.key]
        ]
        recs = iter(ctx.run_units(units, f"{tag}: tuning"))
        for spec in setup.specs:
            mine = [next(recs) for _ in setup.grids[spec.key]]
            out["tuning"][spec.key] = mine
            out["lr"][spec.key], out["edge"][spec.key] = _choose(setup, spec, mine)
    units = [
        unit(
            "final",
            spec,
            out["lr"][spec.key],
            seed,
            _final_config(setup, spec, out["lr"][spec.key], seed),
        )
        for spec in setup.specs
        for seed in _seeds(setup)
    ]
    recs = iter(ctx.run_units(units, f"{tag}: final runs"))
    for spec in setup.specs:
        out["final"][spec.key] = [next(recs) for _ in _seeds(setup)]
    return out


#: assumed cost of one forward pass of the sparse (CSR) model relative to the dense one (estimate only)
CSR_FACTOR = 4.0


def _pending(setup: Setup, ctx) -> tuple[int, int]:
    """Tuning and final runs of ``setup`` not yet stored in ``ctx`` (the final runs' step sizes are
    known only when every tuning run is stored; otherwise all final runs count as pending)."""
    lrs, tune = {}, 0
    for spec in setup.specs:
        if setup.fixed_lr is not None:
            lrs[spec.key] = setup.fixed_lr
            continue
        mine = [ctx.load(_key(_tune_config(setup, spec, lr))) for lr in setup.grids[spec.key]]
        tune += sum(r is None for r in mine)
        if all(r is not None for r in mine):
            lrs[spec.key] = _choose(setup, spec, mine)[0]
    final = sum(
        spec.key not in lrs
        or ctx.load(_key(_final_config(setup, spec, lrs[spec.key], seed))) is None
        for spec in setup.specs
        for seed in _seeds(setup)
    )
    return tune, final


def _key(config: dict) -> str:
    from experiments.studies.runner import run_key

    return run_key(config)


def _unit_costs(setup: Setup, device) -> tuple[float, float]:
    """Seconds of one tuning run and of one final run, from one timed training step and one timed
    forward pass of this setup's model in this process (analyses counted as forward passes)."""
    import time

    from experiments.studies.train import predict_proba, train_model

    model = setup.build(0)
    spec = setup.specs[0]
    lr = setup.fixed_lr or setup.grids[spec.key][0]
    kw = dict(spec=spec, lr=lr, epochs=10**6, batch=setup.batch, seed=0, device=device)
    train_model(model, setup.task, setup.train, max_steps=1, **kw)  # warm-up
    t0 = time.perf_counter()
    train_model(model, setup.task, setup.train, max_steps=3, **kw)
    step = (time.perf_counter() - t0) / 3
    items = setup.test[:256]
    predict_proba(model, setup.task, items, device=device)
    t0 = time.perf_counter()
    predict_proba(model, setup.task, items, device=device)
    item = (time.perf_counter() - t0) / max(len(items), 1)
    steps = _steps(setup)
    evals = len(setup.val) * setup.epochs  # validation each epoch
    tune = steps * step + evals * item
    n_test, n_time = len(setup.test), min(len(setup.test), setup.time_limit)
    settings = len(setup.prune_sets) * len(setup.sparsities)
    forwards = (
        evals
        + n_test  # training, test accuracy
        + (5 * n_test if setup.causal else 0)  # choose (fwd+bwd) + 3 removals
        + (4 * n_time if settings else 0)  # dense timing
        + settings * (2 * n_test + 4 * CSR_FACTOR * n_time)
    )  # pruned, fine-tuned, CSR timing
    final = (steps + setup.finetune_steps * settings) * step + forwards * item
    return tune, final


def estimate(setups: list, ctx, *, startup_s: float = 0.0):
    """The study's wall time before it starts (`experiments.studies.monitor.Estimate`): pending runs
    times their cost measured here (`_unit_costs`), spread over ``ctx.workers``, plus ``startup_s``
    (each worker process loads the data once) when workers are used."""
    from experiments.studies.monitor import Estimate

    runs, seconds, busiest = 0, 0.0, 1
    for setup in setups:
        tune, final = _pending(setup, ctx)
        if not tune + final:
            continue
        tc, fc = _unit_costs(setup, ctx.device)
        runs += tune + final
        w_t, w_f = min(ctx.workers, tune) or 1, min(ctx.workers, final) or 1
        seconds += tune * tc / w_t + final * fc / w_f
        busiest = max(busiest, w_t, w_f)
    if busiest > 1:
        seconds += startup_s
    basis = (
        f"one training step and one forward pass timed here, {ctx.workers} worker(s); rough: load and "
        f"analyses vary, progress lines refine it"
    )
    return Estimate(runs, seconds, basis)


def work(setup: Setup, phase: str, spec, lr: float, seed: int, device, bar=_no_bar) -> dict:
    """The result of one run: a tuning run (``phase == "tune"``) or a final run with its analyses."""
    if phase == "tune":
        with bar(_steps(setup), f"  {spec.label} lr={lr:g}", leave=False) as b:
            _, curves = _train(setup, spec, lr, seed, device, b)
        return {
            "val_acc": curves.val_acc[-1] if curves.val_acc else None,
            "curves": curves.as_dict(),
            "diverged": curves.diverged,
        }
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
        res["weights"] = {
            "threshold": threshold_counts(att),
            "histogram": histogram(att),
            "histogram_all": histogram(setup.prune_sets["all"](model)),
        }
        if setup.causal:
            from experiments.studies.causal import causal_test

            res["causal"] = causal_test(model, setup.task, setup.test, seed=seed, device=device)
        if setup.sparsities:
            res["prune"] = prune_and_measure(
                model,
                sets=setup.prune_sets,
                sparsities=setup.sparsities,
                task=setup.task,
                train_idx=setup.train,
                test_idx=setup.test,
                setting=PruneSetting(spec, lr, setup.batch, seed, setup.finetune_steps),
                device=device,
                time_idx=setup.test[: setup.time_limit],
                on_step=b.update,
            )
    return res
