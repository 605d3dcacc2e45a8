"""Child processes that die with their parent (docs/theory.md section 4.5: solves run in worker processes).

A worker started by mdcert must never outlive the process that started it: a SIGKILLed parent would
otherwise leave workers (and multiprocessing's resource tracker, which waits for them) running for as
long as their current job takes, holding the parent's stdout and stderr open, so that a caller
reading that output never sees end-of-file. `die_with_parent` arranges two independent guards:

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the worker the moment the thread
  that started it exits (start workers from a thread that lives as long as they do, e.g. the main
  thread);
* everywhere: a daemon thread that polls ``os.getppid()`` and ends the worker when the parent is
  gone.

It also makes the worker ignore SIGINT (Ctrl-C reaches the whole process group; the parent handles
it and stops the workers, so no worker prints a KeyboardInterrupt traceback).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent", "set_parent_death_signal"]

_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux only: ask the kernel to send ``sig`` to this process when its parent dies. True if set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int | None = None, *, poll_s: float = 0.25) -> None:
    """Call first thing in a worker process (e.g. as a pool's ``initializer``).

    Args:
        parent_pid: the pid of the process that started this one (``os.getpid()`` there); when it
            already differs from ``os.getppid()`` the parent died while this worker was starting.
        poll_s: how often the watcher thread checks.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # a parent may start workers with SIGINT blocked
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    set_parent_death_signal()
    expected = os.getppid() if parent_pid is None else int(parent_pid)
    if os.getppid() != expected:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != expected:
                os._exit(1)

    threading.Thread(target=watch, name="mdcert-die-with-parent", daemon=True).start()
