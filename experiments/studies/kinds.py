"""The registry of study kinds of ``mdcert study`` (docs/theory.md section 6.5).

A `StudyKind` adds its own options to its sub-parser and runs with a `experiments.studies.runner.StudyContext`
(the run store, device, progress, worker processes). `KINDS` maps a kind's name to ``"module:ATTRIBUTE"`` and is
imported lazily, so a new kind (``realdata``, say) is one module defining a `StudyKind` and one line here.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from certify.errors import MdcertError

__all__ = ["StudyKind", "KINDS", "get_kind", "kind_names", "run_setups"]


@dataclass(frozen=True)
class StudyKind:
    """One kind of study.

    Attributes:
        name: the sub-command (``mdcert study NAME``).
        help: one line for ``--help``.
        configure: adds the kind's own options (the common ones, -o, --seeds, --device, --quick,
            --threads, come from ``mdcert study`` itself).
        setups: ``setups(args) -> [Setup]`` validates the options (one-line `MdcertError`), loads
            the data and builds one `experiments.studies.protocol.Setup` per model size; called
            before the study directory is made, and again in every worker process.
        run: ``run(args, ctx) -> summary`` does the work through ``ctx.run_units`` (resumable) and
            writes the report into ``ctx.root``; `run_setups` is the usual one.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    setups: Callable[[argparse.Namespace], list]
    run: Callable[[argparse.Namespace, object], dict] | None = None

    def execute(self, args: argparse.Namespace, ctx) -> dict:
        """``run(args, ctx)``, or `run_setups` when the kind has no ``run`` of its own."""
        return (self.run or run_setups(self.name, self.setups))(args, ctx)


def run_setups(name: str, setups: Callable[[argparse.Namespace], list]):
    """The usual ``run``: the protocol for every setup, then the report."""
    def run(args, ctx) -> dict:
        from experiments.studies.protocol import run_protocol
        from experiments.studies.report import write_report

        built = setups(args)
        return write_report(ctx, name, built, {s.size: run_protocol(s, ctx) for s in built})
    return run


#: kind name -> "module:ATTRIBUTE" defining its `StudyKind` (imported on first use)
KINDS: dict[str, str] = {
    "sentiment": "experiments.studies.sentiment:STUDY",
    "vision": "experiments.studies.vision:STUDY",
}

_LOADED: dict[str, StudyKind] = {}


def kind_names() -> list[str]:
    """The registered kinds, in registry order."""
    return list(KINDS)


def get_kind(name: str) -> StudyKind:
    """The `StudyKind` registered as ``name``; an unknown name is a one-line `MdcertError`."""
    if name not in KINDS:
        raise MdcertError(f"unknown study {name!r}; use one of {', '.join(KINDS)}")
    if name not in _LOADED:
        module, _, attr = KINDS[name].partition(":")
        kind = getattr(importlib.import_module(module), attr)
        if not isinstance(kind, StudyKind) or kind.name != name:
            raise TypeError(f"registry entry {KINDS[name]!r} is not the StudyKind {name!r}")
        _LOADED[name] = kind
    return _LOADED[name]
