"""What a running study says while it works: the estimate before it starts and a progress line at
least once a minute when no progress bar is drawn (stderr not a terminal: a log file, CI, nohup).

`Estimate` is what a kind predicts before its first run (runs to train, wall seconds, how it was
obtained); `Monitor` is told of every stage and finished run by
`experiments.studies.runner.StudyContext` and, when enabled, prints one line on stderr every
``every`` seconds from a daemon thread: the stage, runs done, elapsed wall time and the time left,
extrapolated from the runs finished in this invocation (or, before the first, from the estimate).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

__all__ = ["Estimate", "Monitor", "duration", "EVERY_S"]

#: seconds between two progress lines off a terminal
EVERY_S = 60.0


def duration(seconds: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"2.5 h"``: a rounded wall-clock duration."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Estimate:
    """A study's run time predicted before it starts.

    Attributes:
        runs: runs to train now (runs already stored are not counted).
        seconds: predicted wall seconds for them.
        basis: how it was obtained (one clause, printed after the number).
    """

    runs: int
    seconds: float
    basis: str

    def line(self, kind: str) -> str:
        if self.runs == 0:
            return f"study {kind}: every run is already stored; writing the report"
        return f"study {kind}: {self.runs} run(s) to train, estimated {duration(self.seconds)} wall ({self.basis})"


class Monitor:
    """Progress lines on ``stream`` (stderr) every ``every`` seconds while started and ``enabled``."""

    def __init__(
        self,
        kind: str,
        *,
        enabled: bool,
        every: float = EVERY_S,
        estimate: Estimate | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.kind, self.enabled, self.every, self.estimate = kind, enabled, float(every), estimate
        self.stream = stream
        self.desc, self.done, self.total = "starting", 0, 0
        self.trained, self.run_seconds = 0, 0.0
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def stage(self, desc: str, done: int = 0, total: int = 0) -> None:
        """A new stage; for a batch of runs, ``done`` of ``total`` already stored."""
        with self._lock:
            self.desc, self.done, self.total = desc, done, total

    def finished(self, seconds: float) -> None:
        """One run finished and was stored (``seconds``: its own wall time)."""
        with self._lock:
            self.done += 1
            self.trained += 1
            self.run_seconds += seconds

    def line(self) -> str:
        """The progress line as of now."""
        with self._lock:
            elapsed = time.perf_counter() - self.t0
            planned = (
                f" of {self.estimate.runs}"
                if self.estimate is not None and self.estimate.runs
                else ""
            )
            stored = f"{self.done}/{self.total} runs stored; " if self.total else ""
            runs = f"{self.trained}{planned} trained now in " if self.total or self.trained else ""
            text = f"study {self.kind}: {self.desc}: {stored}{runs}{duration(elapsed)} wall"
            left = None
            if self.estimate is not None and self.estimate.runs:
                if self.trained:
                    left = elapsed / self.trained * max(self.estimate.runs - self.trained, 0)
                else:
                    left = max(self.estimate.seconds - elapsed, 0.0)
            return text + (f", about {duration(left)} left" if left is not None else "")

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            print(self.line(), file=self.stream or sys.stderr, flush=True)

    def __enter__(self) -> "Monitor":
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="study-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
            self._thread = None
