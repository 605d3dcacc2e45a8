"""The Ray engine of ``mdcert sweep``: one Ray task per job, on an existing cluster or a local instance.

``address`` None starts a local Ray instance with ``workers`` CPUs (no dashboard) and stops it at the
end (`ray.shutdown`); ``"auto"`` or ``"ray://HOST:PORT"`` connects to a running cluster, whose
workers must import the same mdcert version and read the inputs and the sweep directory at the same
paths (shared storage; docs/scaling.md). A driver already connected to Ray (a library caller) is
reused and left connected. Worker death is retried by Ray itself (``max_retries``); a job that
exhausts its retries is recorded failed by the driver with Ray's one-line reason.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Iterable, Iterator

from certify.errors import MdcertError

from experiments.sweep.jobs import Job
from experiments.sweep.local import CODE_ROOT

__all__ = ["RayEngine"]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(exc).__name__)


class RayEngine:
    """Ray tasks; `run` yields each job's index line as it finishes (at most ``window`` in flight).

    Args:
        workers: CPUs of a local instance (ignored on a cluster, whose CPUs set the window).
        retries: Ray's ``max_retries`` for a task whose worker died.
        address: None (local instance), ``"auto"`` or ``"ray://HOST:PORT"``.
        preload: modules each worker imports before the first job (the kind's `JobKind.preload`).
    """

    name = "ray"

    def __init__(self, *, workers: int, retries: int, address: str | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        self.workers, self.retries, self.address, self.preload = workers, retries, address, tuple(preload)
        self.owned = False
        self.startup_s = 0.0
        self.capacity = workers
        self._remote = None
        self._inflight: dict = {}

    def start(self) -> float:
        """Connect to (or start) Ray; the seconds it took (reported apart from the jobs' time)."""
        try:
            import ray
        except ImportError:
            raise MdcertError("--engine ray needs Ray: pip install 'mdcert[ray]' (or use --engine local)") from None
        from experiments.sweep.worker import execute, warm

        t0 = time.perf_counter()
        if not ray.is_initialized():
            quiet = dict(logging_level=logging.ERROR, log_to_driver=False)
            if self.address:
                try:
                    ray.init(address=self.address, **quiet)
                except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                    raise MdcertError(f"cannot connect to the Ray cluster at {self.address!r} ({_one_line(exc)}); "
                                      f"start it with 'ray start --head' or check --address") from None
            else:
                path = os.pathsep.join(filter(None, [CODE_ROOT, os.environ.get("PYTHONPATH")]))
                ray.init(num_cpus=self.workers, include_dashboard=False,   # workers import this very mdcert
                         runtime_env={"env_vars": {"PYTHONPATH": path}}, **quiet)
            self.owned = True
        self.capacity = max(1, int(ray.cluster_resources().get("CPU", self.workers)))
        self._remote = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(execute)
        warming = ray.remote(num_cpus=1, max_retries=self.retries)(warm)   # start and load the workers
        ray.get([warming.remote(self.preload) for _ in range(self.capacity)])
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def run(self, jobs: Iterable[Job]) -> Iterator[dict]:
        """Submit ``jobs`` lazily (a bounded window in flight); yield index lines as tasks finish."""
        import ray

        from experiments.sweep.worker import failed_record

        window = max(4 * self.capacity, 32)
        source = iter(jobs)
        inflight = self._inflight
        exhausted = False
        while True:
            while not exhausted and len(inflight) < window:
                job = next(source, None)
                if job is None:
                    exhausted = True
                else:
                    inflight[self._remote.remote(job)] = job
            if not inflight:
                return
            refs = list(inflight)
            done, rest = ray.wait(refs, num_returns=1)
            if rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                done += more
            for ref in done:
                job = inflight.pop(ref)
                try:
                    yield ray.get(ref)
                except ray.exceptions.RayError as exc:
                    yield failed_record(job, f"Ray task failed after {self.retries} retries: {_one_line(exc)}",
                                        attempts=self.retries + 1)

    def close(self, *, kill: bool = False) -> None:
        """Cancel what is in flight (``kill``: force, which ends those tasks' workers) and stop the
        local instance this engine started (a cluster it connected to is only disconnected)."""
        try:
            import ray
        except ImportError:
            return
        if kill and ray.is_initialized():
            for ref in list(self._inflight):
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished or the cluster is gone: nothing to cancel
                    pass
        self._inflight.clear()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False
