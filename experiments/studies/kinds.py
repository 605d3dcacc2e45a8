"""The registry of study kinds of ``mdcert study``, and the option parsers they share (docs/theory.md section 6.5).

A `StudyKind` adds its own options to its sub-parser and runs with the command's frozen configuration
(``experiments.commands.study.Config``: the common options as fields, the kind's own read as attributes)
and a `experiments.studies.runner.StudyContext` (the run store, device, progress, worker processes). `KINDS` maps a kind's name to ``"module:ATTRIBUTE"`` and is
imported lazily, so a new kind (``realdata``, say) is one module defining a `StudyKind` and one line here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from certify.errors import MdcertError
from certify.lazy import lazy_registry

__all__ = [
    "StudyKind",
    "KINDS",
    "get_kind",
    "kind_names",
    "run_setups",
    "parse_sizes",
    "parse_optimizers",
]


@dataclass(frozen=True)
class StudyKind:
    """One kind of study.

    Attributes:
        name: the sub-command (``mdcert study NAME``).
        help: one line for ``--help``.
        configure: adds the kind's own options (the common ones, -o, --seeds, --device, --quick,
            --threads, come from ``mdcert study`` itself).
        setups: ``setups(config) -> [Setup]`` validates the options (one-line `MdcertError`), loads
            the data and builds one `experiments.studies.protocol.Setup` per model size; called
            before the study directory is made, and again in every worker process
            (`experiments.studies.worker`), so ``config`` is frozen and picklable.
        run: ``run(config, ctx) -> summary`` does the work through ``ctx.run_units`` (resumable) and
            writes the report into ``ctx.root``; `run_setups` is the usual one.
        estimate: ``estimate(config, ctx) -> experiments.studies.monitor.Estimate | None``, the run time
            before the study starts; kinds run by `run_setups` get `experiments.studies.protocol.estimate`.
        unit: what the counts ``ctx.trained`` / ``ctx.reused`` count (``run``; ``certificate`` for realdata).
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    setups: Callable[[Any], list]
    run: Callable[[Any, object], dict] | None = None
    estimate: Callable[[Any, object], object] | None = None
    unit: str = "run"

    def predict(self, config: Any, ctx, *, startup_s: float = 0.0):
        """The `experiments.studies.monitor.Estimate` of this study in ``ctx``, or None when the kind has none."""
        if self.estimate is not None:
            return self.estimate(config, ctx)
        if self.run is None:
            from experiments.studies.protocol import estimate

            return estimate(self.setups(config), ctx, startup_s=startup_s)
        return None

    def execute(self, config: Any, ctx) -> dict:
        """``run(config, ctx)``, or `run_setups` when the kind has no ``run`` of its own."""
        return (self.run or run_setups(self.name, self.setups))(config, ctx)


def run_setups(name: str, setups: Callable[[Any], list]):
    """The usual ``run``: the protocol for every setup, then the report."""

    def run(config, ctx) -> dict:
        from experiments.studies.protocol import run_protocol
        from experiments.studies.report import write_report

        built = setups(config)
        return write_report(ctx, name, built, {s.size: run_protocol(s, ctx) for s in built})

    return run


#: kind name -> "module:ATTRIBUTE" defining its `StudyKind` (imported on first use)
KINDS: dict[str, str] = {
    "sentiment": "experiments.studies.sentiment:STUDY",
    "vision": "experiments.studies.vision:STUDY",
    "realdata": "experiments.studies.realdata.study:STUDY",
    "pgd": "experiments.studies.pgd:STUDY",
}

_lookup = lazy_registry("study", KINDS, StudyKind)


def kind_names() -> list[str]:
    """The registered kinds, in registry order."""
    return list(KINDS)


def get_kind(name: str) -> StudyKind:
    """The `StudyKind` registered as ``name``; an unknown name is a one-line `MdcertError`."""
    return _lookup(name)


def parse_sizes(text: str, *, allowed: tuple[int, ...]) -> list[int]:
    """``"3,4,6"`` -> ``[3, 4, 6]``; each must be one of ``allowed``; no repeats."""
    parts = [s.strip() for s in str(text).split(",")]
    if not parts or any(not s.isdigit() for s in parts):
        raise MdcertError(f"--size {text!r}: give sizes like 3 or 3,4,6")
    sizes = [int(s) for s in parts]
    bad = [s for s in sizes if s not in allowed]
    if bad:
        raise MdcertError(f"--size {bad[0]}: use one of {', '.join(map(str, allowed))}")
    if len(set(sizes)) != len(sizes):
        raise MdcertError(f"--size {text!r} repeats a size")
    return sizes


def parse_optimizers(text: str, grids: dict) -> list:
    """``"1.1,2,3,adam"`` -> `OptimizerSpec` list; each needs a step-size grid in ``grids``; GD (p = 2) first
    is not required, but the paired differences of the report need it in the list."""
    from experiments.studies.train import parse_optimizer

    specs = [parse_optimizer(s) for s in str(text).split(",")]
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise MdcertError(f"--optimizers {text!r} repeats an optimizer")
    for s in specs:
        if s.key not in grids:
            known = ", ".join(k[1:] if k.startswith("p") else k for k in grids)
            raise MdcertError(f"--optimizers: no step-size grid for {s.label}; use {known}")
    return specs
