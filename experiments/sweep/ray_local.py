"""The local Ray instance of ``mdcert sweep --engine ray`` (no ``--address``): started in a session of
its own, stopped to the last process.

`ray.init()` without an address starts Ray's processes (GCS, raylet, dashboard and runtime-env
agents, log monitor, workers) in the driver's own process group: a terminal's Ctrl-C reaches every
one of them, the raylet dumps a native stack on the shared stderr, and `ray.shutdown` racing with
their deaths can crash the driver. Here the instance is ``ray start --head --block`` under a small
supervisor that leads a new session (``start_new_session``), with its output in a log file: the
driver alone handles Ctrl-C and SIGTERM, and every Ray process of the instance shares the
supervisor's session id (Ray's workers make process groups of their own, but not sessions), so
`LocalRay.stop` ends exactly those processes, and nothing else on the machine (another user's or
another sweep's Ray is another session).

The supervisor dies with the driver: it asks the kernel for SIGTERM when the driver's thread that
started it exits (``PR_SET_PDEATHSIG``, Linux) and also polls its parent; either way it kills its
session before exiting. The instance uses token authentication (Ray's default) with a token made for
this process, passed through the environment (nothing is written under HOME), free ports, and a
temporary directory removed at the end. Linux only for the session listing (``/proc``); elsewhere
the supervisor's process group is killed.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from certify.errors import MdcertError

__all__ = ["LocalRay", "session_pids", "kill_session", "supervise"]

#: one token per driver process: Ray caches the token it first reads
_TOKEN = secrets.token_hex(32)
_READY = "Ray runtime started"


def _stat(pid: int) -> tuple[str, str, int] | None:
    """(command name, state, session id) of ``pid`` from /proc, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    rest = text[text.rindex(")") + 2 :].split()
    return name, rest[0], int(rest[3])


def session_pids(sid: int) -> dict[int, str]:
    """Live (not zombie) processes of session ``sid``: pid -> command name."""
    out = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[2] == sid and info[1] != "Z":
                out[int(entry)] = info[0]
    return out


def kill_session(sid: int, *, spare: int | None = None, wait_s: float = 5.0) -> dict[int, str]:
    """SIGKILL every process of session ``sid`` but ``spare`` until none is left or ``wait_s`` passes
    (Ray may fork while it is being killed); the processes still alive at the end."""
    deadline = time.monotonic() + wait_s
    while True:
        left = {p: n for p, n in session_pids(sid).items() if p != spare}
        if not left or time.monotonic() > deadline:
            return left
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def supervise(parent: int, argv: list[str]) -> None:
    """The supervisor process (session leader): run ``argv`` (``ray start --head --block ...``) until
    it exits, the driver ``parent`` dies, or SIGTERM arrives; then kill the whole session."""
    from certify.process import set_parent_death_signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    set_parent_death_signal(signal.SIGTERM)
    code = 1
    child = None
    try:
        if os.getppid() == parent and not stop:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
            while not stop and os.getppid() == parent:
                try:
                    code = child.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    pass
    finally:
        sid = os.getsid(0)
        if sid == os.getpid():
            kill_session(sid, spare=os.getpid())
        elif child is not None:
            child.kill()
        if os.getppid() != parent:  # the driver is gone: nobody else will remove the directory
            for arg in argv:
                if arg.startswith("--temp-dir="):
                    shutil.rmtree(arg.partition("=")[2], ignore_errors=True)
        os._exit(code if not stop else 143)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRay:
    """A Ray head on this machine in its own session; `start` returns its address, `stop` ends it.

    Args:
        cpus: the instance's CPUs (one job each).
        env: extra environment of the Ray processes (the workers inherit it: PYTHONPATH, BLAS threads).
        timeout_s: the longest wait for Ray to start.
    """

    def __init__(self, *, cpus: int, env: dict[str, str], timeout_s: float = 180.0) -> None:
        self.cpus, self.env, self.timeout_s = cpus, dict(env), timeout_s
        self.proc: subprocess.Popen | None = None
        self.tmp: str | None = None
        self.address: str | None = None
        self.raylet: int | None = None
        self._saved_env: dict[str, str | None] = {}

    def start(self) -> str:
        """Start the head and wait until Ray says it runs; the GCS address ``127.0.0.1:PORT``."""
        base = (
            tempfile.gettempdir()
        )  # Ray's sockets live below: a UNIX socket path has <= 107 bytes
        self.tmp = tempfile.mkdtemp(
            prefix="mdcert-ray-",
            dir=base if len(base) <= 32 or not os.path.isdir("/tmp") else "/tmp",
        )
        port = _free_port()
        argv = [
            sys.executable,
            "-c",
            "from ray.scripts.scripts import main; main()",
            "start",
            "--head",
            "--block",
            f"--port={port}",
            f"--num-cpus={self.cpus}",
            "--num-gpus=0",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--temp-dir={self.tmp}",
        ]
        if (
            importlib.util.find_spec("grpc") is not None
        ):  # ray[client] present: its server, off 10001
            argv.append(f"--ray-client-server-port={_free_port()}")
        env = {
            **os.environ,
            **self.env,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": _TOKEN,
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        code = "import sys; from experiments.sweep.ray_local import supervise; supervise(int(sys.argv[1]), sys.argv[2:])"
        log_path = Path(self.tmp) / "ray-start.log"
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, str(os.getpid()), *argv],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.timeout_s
        while _READY not in log_path.read_text(errors="replace"):
            if self.proc.poll() is not None:
                lines = [
                    ln.strip()
                    for ln in log_path.read_text(errors="replace").splitlines()
                    if ln.strip()
                ]
                raise MdcertError(
                    f"the local Ray instance did not start ({lines[-1][:300] if lines else 'no output'}); "
                    f"try --engine local"
                )
            if time.monotonic() > deadline:
                raise MdcertError(
                    f"the local Ray instance did not start within {self.timeout_s:.0f} s; "
                    f"try --engine local"
                )
            time.sleep(0.1)
        self.raylet = next(
            (p for p, n in session_pids(self.proc.pid).items() if n == "raylet"), None
        )
        self.address = f"127.0.0.1:{port}"
        return self.address

    def driver_env(self) -> None:
        """Give this process the instance's token (Ray reads it from the environment; its config cache
        is refreshed as `ray.init` does for a local instance of its own)."""
        for name, value in (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN", _TOKEN)):
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value
        _refresh_ray_config()

    def failure(self) -> str | None:
        """None while the instance runs; else what stopped (the raylet, or the whole instance)."""
        if self.proc is None or self.proc.poll() is not None:
            return "the local Ray instance exited"
        if self.raylet is not None:
            info = _stat(self.raylet)
            if info is None or info[1] == "Z":
                return f"Ray's raylet (pid {self.raylet}) died"
        return None

    def pids(self) -> dict[int, str]:
        """The instance's live processes: pid -> command name."""
        return session_pids(self.proc.pid) if self.proc is not None else {}

    def stop(self) -> dict[int, str]:
        """Kill every process of the instance and remove its directory; the processes left (none)."""
        left: dict[int, str] = {}
        if self.proc is not None:
            sid = self.proc.pid
            if os.path.isdir("/proc"):
                left = kill_session(sid)
            else:  # no session listing: the supervisor's process group (Ray's workers die with the raylet)
                try:
                    os.killpg(sid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self._saved_env:
            self._saved_env = {}
            _refresh_ray_config()
        return left


def _refresh_ray_config() -> None:
    """Re-read Ray's RAY_* settings from the environment (what Ray's own local start does)."""
    try:
        from ray._raylet import Config

        Config.initialize("")
    except (
        ImportError,
        AttributeError,
    ):  # another Ray version: it reads the environment at connect
        pass
