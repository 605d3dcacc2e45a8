"""Study runs in worker processes (experiments/studies/worker.py): the worker spec is picklable and
carries the frozen configuration."""

from __future__ import annotations

import pickle

from experiments.commands.study import Config
from experiments.studies.worker import StudyWorker, remote_unit


def test_the_worker_spec_travels_to_a_spawned_process() -> None:
    config = Config.from_options({"kind": "sentiment", "out": "o", "size": "3", "optimizers": "2"})
    spec = StudyWorker("sentiment", config, 2)
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and again.config.size == "3" and again.threads == 2
    init = pickle.loads(pickle.dumps(spec.init))  # the pool's initializer, a bound method
    assert (
        init.__self__ == spec
        and callable(again)
        and remote_unit.__module__ == "experiments.studies.worker"
    )
