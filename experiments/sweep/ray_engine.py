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
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from certify.errors import MdcertError

from experiments.sweep.jobs import Job

__all__ = ["RayEngine", "EngineStopped", "probe_address"]

#: the code root holding this experiments package (first on the Ray workers' PYTHONPATH)
CODE_ROOT = str(Path(__file__).resolve().parents[2])

#: seconds to wait for the driver to disconnect from an instance that died
SHUTDOWN_S = 3.0

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
        why = (
            "timed out"
            if isinstance(exc, TimeoutError)
            else (getattr(exc, "strerror", None) or _one_line(exc))
        )
        raise MdcertError(
            f"cannot reach the Ray cluster at {address!r} ({why}); start it with "
            f"'ray start --head' or check --address"
        ) from None


def _python_handlers() -> dict:
    """This process's Python handlers of SIGINT and SIGTERM (main thread only; else empty)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict) -> None:
    """Put ``handlers`` back: `ray.init` installs Ray's native failure handler for SIGTERM, which
    prints a native stack and kills the driver before the sweep can stop its workers."""
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)


def _shutdown_within(seconds: float) -> None:
    """`ray.shutdown` in a daemon thread, waited for at most ``seconds``."""
    import ray

    worker = threading.Thread(target=ray.shutdown, name="mdcert-ray-shutdown", daemon=True)
    worker.start()
    worker.join(seconds)


class _NativeStderr:
    """While Ray runs in this process, file descriptor 2 (where Ray's native code writes its log
    lines, stack dumps and signal reports) goes to ``path``; Python's `sys.stderr` (one-line
    messages, the progress bar) keeps the original stream when it writes to descriptor 2."""

    def __init__(self, path: str | os.PathLike) -> None:
        sys.stderr.flush()
        self.saved = os.dup(2)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 2)
        os.close(log)
        self.python = None
        try:
            uses_fd2 = sys.stderr.fileno() == 2
        except (
            AttributeError,
            OSError,
            ValueError,
        ):  # replaced (a test's capture): nothing to keep
            uses_fd2 = False
        if uses_fd2:
            self.python = sys.stderr
            sys.stderr = open(
                os.dup(self.saved),
                "w",
                buffering=1,
                encoding=self.python.encoding,  # noqa: SIM115
                errors="backslashreplace",
            )

    def restore(self) -> None:
        sys.stderr.flush()
        if self.python is not None:
            replaced, sys.stderr = sys.stderr, self.python
            replaced.close()
        os.dup2(self.saved, 2)
        os.close(self.saved)


class RayEngine:
    """Ray tasks; `run` yields each job's index line as it finishes (at most ``window`` in flight).

    Args:
        workers: CPUs of a local instance (ignored on a cluster, whose CPUs set the window).
        retries: Ray's ``max_retries`` for a task whose worker died.
        address: None (local instance), ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:PORT"``.
        preload: modules each worker imports before the first job (the kind's `JobKind.preload`).
        on_lost: called (from a watcher thread, with one line) the moment the raylet of the local
            instance dies, after the instance's other processes are stopped: Ray's own driver code
            ends the process soon after its raylet dies, too soon for the sweep to stop in order, so
            a command line passes a callback that reports and exits. None: Ray's behaviour.
    """

    name = "ray"

    def __init__(
        self,
        *,
        workers: int,
        retries: int,
        address: str | None = None,
        preload: tuple[str, ...] = (),
        on_lost: Callable[[str], None] | None = None,
        native_log: str | os.PathLike | None = None,
    ) -> None:
        self.workers, self.retries, self.address, self.preload = (
            workers,
            retries,
            address,
            tuple(preload),
        )
        self.on_lost, self.native_log = on_lost, native_log
        self._native: _NativeStderr | None = None
        self._closing = threading.Event()
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
            raise MdcertError(
                "--engine ray needs Ray: pip install 'mdcert[ray]' (or use --engine local)"
            ) from None
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

                env = {name: "1" for name in THREAD_VARS}  # one BLAS thread per worker
                env["PYTHONPATH"] = CODE_ROOT  # workers import this very mdcert
                self.local = LocalRay(cpus=self.workers, env=env)
                address = self.local.start()
                self.local.driver_env()
                if self.on_lost is not None and self.local.raylet is not None:
                    threading.Thread(
                        target=self._watch,
                        args=(self.local.raylet,),
                        name="mdcert-raylet-watch",
                        daemon=True,
                    ).start()
            handlers = _python_handlers()
            if self.native_log is not None:
                self._native = _NativeStderr(self.native_log)
            try:
                ray.init(address=address, **quiet)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                raise MdcertError(
                    f"cannot connect to the Ray cluster at {address!r} ({_one_line(exc)}); "
                    f"start it with 'ray start --head' or check --address"
                ) from None
            finally:
                _restore(handlers)
        self.capacity = max(1, int(ray.cluster_resources().get("CPU", self.workers)))
        self._remote = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(
            execute
        )
        warming = ray.remote(num_cpus=1, max_retries=self.retries)(
            warm
        )  # start and load the workers
        ray.get([warming.remote(self.preload) for _ in range(self.capacity)])
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def _watch(self, pid: int) -> None:
        """Wait for the raylet ``pid`` to end (a pidfd where Linux has one, else polling); unless the
        engine is closing, stop the instance and call `on_lost`."""
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = None
        try:
            while not self._closing.is_set():
                if fd is not None:
                    ready, _, _ = select.select([fd], [], [], 0.5)
                    dead = bool(ready)
                else:
                    time.sleep(0.1)
                    dead = self.local is None or self.local.failure() is not None
                if dead:
                    break
        finally:
            if fd is not None:
                os.close(fd)
        local = self.local
        if self._closing.is_set() or local is None or self.on_lost is None:
            return
        local.stop()
        self.on_lost(
            f"Ray's raylet (pid {pid}) died; stopping the sweep (finished records are kept; rerun to resume)"
        )

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
                        raise EngineStopped(
                            f"{down}; stopping the sweep (finished records are kept; rerun "
                            f"to resume)"
                        ) from None
                    line = failed_record(
                        job,
                        f"Ray task failed after {self.retries} retries: {_one_line(exc)}",
                        attempts=self.retries + 1,
                    )
                del inflight[ref]
                yield line

    def close(self, *, kill: bool = False) -> None:
        """Stop: a local instance this engine started loses every process (disconnect first); on a
        cluster, cancel what is in flight (``kill``: force, which ends those tasks' workers) and
        disconnect. A Ray the caller had connected is left as it was."""
        self._closing.set()
        try:
            import ray
        except (
            Exception
        ):  # not installed, or its import was interrupted half-way: no driver to stop
            ray = None
        try:
            if ray is not None and kill and self.local is None and ray.is_initialized():
                for ref in list(self._inflight):
                    try:
                        ray.cancel(ref, force=True)
                    except Exception:  # already finished or the cluster is gone: nothing to cancel
                        pass
            self._inflight.clear()
            if (
                self.owned and ray is not None
            ):  # also after an interrupted ray.init (a half-made driver
                # crashes at exit)
                if self.local is not None and self.local.failure() is not None:
                    _shutdown_within(SHUTDOWN_S)  # its GCS is gone: Ray would wait a minute for it
                else:
                    ray.shutdown()  # (Ray allows repeated calls)
                self.owned = False
        finally:
            if self.local is not None:
                self.local.stop()
                self.local = None
            if self._native is not None:
                native, self._native = self._native, None
                native.restore()
