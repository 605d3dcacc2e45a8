"""A study's runs in worker processes: what a worker does to rebuild the set-ups and run one unit.

`experiments.studies.runner.StudyContext` schedules its pending runs on ``ctx.remote`` when it has
several workers; ``mdcert study`` gives it a `StudyWorker` of the study's kind and frozen
configuration (picklable: it travels to each spawned worker). The worker rebuilds the kind's set-ups
from the configuration once per process (`remote_unit`) and runs
`experiments.studies.protocol.work`; a run's result depends only on its configuration and the thread
count, so it is the same record as an in-process run.

This module sits above the store (`experiments.studies.runner`) and the kinds
(`experiments.studies.kinds`, `experiments.studies.protocol`); none of them imports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["StudyWorker", "worker_init", "remote_unit"]


def worker_init(parent_pid: int, threads: int) -> None:
    """Initializer of a worker process: die with the parent, deterministic kernels, ``threads`` threads."""
    from certify.process import die_with_parent
    from experiments.studies.train import set_determinism

    die_with_parent(parent_pid)
    set_determinism(threads)


_SETUPS: dict = {}


def remote_unit(kind: str, config: Any, where: tuple) -> tuple[dict, float, float]:
    """Run one unit in a worker: rebuild the kind's setups from ``config`` (the study's frozen
    configuration; once per process), then `experiments.studies.protocol.work`; returns
    ``(result, seconds, cpu_seconds)``."""
    from experiments.studies.kinds import get_kind
    from experiments.studies.protocol import work
    from experiments.studies.train import resolve_device

    study, size, phase, key, lr, seed = where
    cache = (kind, repr(config))
    if cache not in _SETUPS:
        _SETUPS.clear()
        _SETUPS[cache] = {s.size: s for s in get_kind(kind).setups(config)}
    setup = _SETUPS[cache][size]
    spec = next(s for s in setup.specs if s.key == key)
    t0, c0 = time.perf_counter(), time.process_time()
    result = work(setup, phase, spec, lr, seed, resolve_device(config.device))
    return result, time.perf_counter() - t0, time.process_time() - c0


@dataclass(frozen=True)
class StudyWorker:
    """``StudyContext.remote`` of a study: runs ``where`` of kind ``kind`` in a worker process.

    Attributes:
        kind: the study kind (`experiments.studies.kinds.KINDS`).
        config: the study's frozen, picklable configuration (``experiments.commands.study.Config``):
            what `experiments.studies.kinds.StudyKind.setups` reads.
        threads: torch intra-op threads per worker.
    """

    kind: str
    config: Any
    threads: int = 1

    def init(self, parent_pid: int) -> None:
        """The pool's initializer (`worker_init`)."""
        worker_init(parent_pid, self.threads)

    def __call__(self, where: tuple) -> tuple[dict, float, float]:
        return remote_unit(self.kind, self.config, where)
