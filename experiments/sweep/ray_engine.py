"""The Ray engine of ``mdcert sweep``: one Ray task per job, on an existing cluster or a local instance.

``address`` None starts a local Ray instance with ``workers`` CPUs in a session of its own
(`experiments.sweep.ray_local.LocalRay`) and stops every one of its processes at the end, also on
Ctrl-C or SIGTERM; ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:PORT"`` connects to a running
cluster, whose workers must import the same mdcert version and read the inputs and the sweep
directory at the same paths (shared storage; docs/scaling.md), and which is only disconnected at
the end. An address where nothing listens is refused in seconds (a TCP probe before `ray.init`,
which would otherwise retry for minutes). A driver already connected to Ray (a library caller) is
reused and left connected. Worker death is retried by Ray itself (``max_retries``); a job that
exhausts its retries is recorded failed by the driver with Ray's one-line reason, unless the
instance itself is gone (its raylet died, the cluster vanished): then the sweep stops with one line
(`EngineStopped`) instead of charging every remaining job.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Iterable, Iterator

from certify.errors import MdcertError

from experiments.sweep.jobs import Job
from experiments.sweep.local import CODE_ROOT

__all__ = ["RayEngine", "EngineStopped", "probe_address"]

#: seconds to wait for a TCP connection to a cluster's address before giving up
PROBE_S = 10.0


class EngineStopped(MdcertError):
    """The Ray instance or cluster stopped under the sweep (finished records are kept)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(exc).__name__)


def probe_address(address: str, *, timeout_s: float = PROBE_S) -> None:
    """Refuse a ``HOST:PORT`` or ``ray://HOST:PORT`` where nothing accepts a TCP connection.

    Raises:
        MdcertError: one line naming the address and the fix.
    """
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (getattr(exc, "strerror", None) or _one_line(exc))
        raise MdcertError(f"cannot reach the Ray cluster at {address!r} ({why}); start it with "
                          f"'ray start --head' or check --address") from None


class RayEngine:
    """Ray tasks; `run` yields each job's index line as it finishes (at most ``window`` in flight).

    Args:
        workers: CPUs of a local instance (ignored on a cluster, whose CPUs set the window).
        retries: Ray's ``max_retries`` for a task whose worker died.
        address: None (local instance), ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:PORT"``.
        preload: modules each worker imports before the first job (the kind's `JobKind.preload`).
    """

    name = "ray"

    def __init__(self, *, workers: int, retries: int, address: str | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        self.workers, self.retries, self.address, self.preload = workers, retries, address, tuple(preload)
        self.owned = False
        self.local = None
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
        from experiments.sweep.worker import THREAD_VARS, execute, warm

        t0 = time.perf_counter()
        if not ray.is_initialized():
            quiet = dict(logging_level=logging.ERROR, log_to_driver=False)
            self.owned = True
            if self.address:
                probe_address(self.address)
                address = self.address
            else:
                from experiments.sweep.ray_local import LocalRay

                env = {name: "1" for name in THREAD_VARS}   # one BLAS thread per worker
                env["PYTHONPATH"] = CODE_ROOT               # workers import this very mdcert
                self.local = LocalRay(cpus=self.workers, env=env)
                address = self.local.start()
                self.local.driver_env()
            try:
                ray.init(address=address, **quiet)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                raise MdcertError(f"cannot connect to the Ray cluster at {address!r} ({_one_line(exc)}); "
                                  f"start it with 'ray start --head' or check --address") from None
        self.capacity = max(1, int(ray.cluster_resources().get("CPU", self.workers)))
        self._remote = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(execute)
        warming = ray.remote(num_cpus=1, max_retries=self.retries)(warm)   # start and load the workers
        ray.get([warming.remote(self.preload) for _ in range(self.capacity)])
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def failure(self) -> str | None:
        """None while the instance or cluster runs; else one line saying what stopped."""
        if self.local is not None:
            return self.local.failure()
        import ray

        try:
            nodes = ray.nodes()
        except Exception as exc:  # the GCS is gone
            return f"the Ray cluster is unreachable ({_one_line(exc)})"
        if not any(n.get("Alive") and n.get("Resources", {}).get("CPU") for n in nodes):
            return "no live Ray node with CPUs is left"
        return None

    def run(self, jobs: Iterable[Job]) -> Iterator[dict]:
        """Submit ``jobs`` lazily (a bounded window in flight); yield index lines as tasks finish.

        Raises:
            EngineStopped: a task failed because the instance itself stopped.
        """
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
                job = inflight[ref]
                try:
                    line = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    down = self.failure()
                    if down is not None:
                        raise EngineStopped(f"{down}; stopping the sweep (finished records are kept; rerun "
                                            f"to resume)") from None
                    line = failed_record(job, f"Ray task failed after {self.retries} retries: {_one_line(exc)}",
                                         attempts=self.retries + 1)
                del inflight[ref]
                yield line

    def close(self, *, kill: bool = False) -> None:
        """Stop: a local instance this engine started loses every process (disconnect first); on a
        cluster, cancel what is in flight (``kill``: force, which ends those tasks' workers) and
        disconnect. A Ray the caller had connected is left as it was."""
        try:
            import ray
        except ImportError:
            return
        try:
            if kill and self.local is None and ray.is_initialized():
                for ref in list(self._inflight):
                    try:
                        ray.cancel(ref, force=True)
                    except Exception:  # already finished or the cluster is gone: nothing to cancel
                        pass
            self._inflight.clear()
            if self.owned:        # also after an interrupted ray.init: a half-made driver crashes at exit
                ray.shutdown()    # (Ray allows repeated calls)
                self.owned = False
        finally:
            if self.local is not None:
                self.local.stop()
                self.local = None
