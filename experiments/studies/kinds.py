"""The registry of study kinds of ``mdcert study`` (docs/theory.md section 6.5).

A `StudyKind` adds its own options to its sub-parser and runs with a `experiments.studies.runner.StudyContext`
(the run store, device, progress). `KINDS` maps a kind's name to ``"module:ATTRIBUTE"`` and is
imported lazily, so a new kind (``realdata``, say) is one module defining a `StudyKind` and one line here.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from certify.errors import MdcertError

__all__ = ["StudyKind", "KINDS", "get_kind", "kind_names"]


@dataclass(frozen=True)
class StudyKind:
    """One kind of study.

    Attributes:
        name: the sub-command (``mdcert study NAME``).
        help: one line for ``--help``.
        configure: adds the kind's own options (the common ones, -o, --seeds, --device, --quick,
            --threads, come from ``mdcert study`` itself).
        run: ``run(args, ctx) -> summary`` does the work through ``ctx.run_unit`` (resumable) and
            writes the report into ``ctx.root``; raises `MdcertError` on bad options before any work.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, object], dict]


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
