"""Progress bars with an ETA for the long-running commands, on a terminal only.

One helper for every command (``certify`` at high digits, ``check`` with a path, ``paths``,
``regpath``, ``sweep``, ``data``): a `tqdm` bar on stderr that is shown only when stderr is a
terminal (``enabled=None``), so pipes, files and CI logs never receive carriage returns. Lines the
command prints while a bar is shown go through `Progress.write`, which keeps the bar below them.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["Progress", "progress", "show_progress"]


def show_progress(enabled: bool | None = None) -> bool:
    """Whether to draw a bar: ``enabled`` when given (``--progress on|off``), else whether stderr is
    a terminal (``--progress auto``)."""
    if enabled is not None:
        return bool(enabled)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


class Progress:
    """A progress bar on stderr (a disabled one costs nothing and draws nothing).

    Use as a context manager; `update` / `set` advance it, `stage` names what runs now, `write`
    prints a line to stdout above the bar.
    """

    def __init__(
        self,
        total: float | None,
        *,
        desc: str,
        unit: str = "it",
        enabled: bool | None = None,
        fraction: bool = False,
        eta: bool = True,
        leave: bool = False,
    ) -> None:
        self.enabled = show_progress(enabled)
        self._bar = None
        if self.enabled:
            from tqdm import tqdm

            fmt = None
            if fraction:  # a fraction of the work: percent, elapsed and ETA, no counts of "units"
                fmt = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}{postfix}"
            if not eta:  # steps of very unequal cost: a rate-based ETA would mislead
                fmt = "{desc}: {n_fmt}/{total_fmt} {unit}, {elapsed} elapsed{postfix}"
            self._bar = tqdm(
                total=total,
                desc=desc,
                unit=unit,
                file=sys.stderr,
                dynamic_ncols=True,
                leave=leave,
                smoothing=0.1,
                mininterval=0.25,
                bar_format=fmt,
            )
        self._last = 0.0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        """Advance by ``n`` units."""
        if self._bar is not None:
            self._bar.update(n)

    def set(self, done: float) -> None:
        """Set the amount done (never moves backwards)."""
        if self._bar is not None and done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def stage(self, text: str, *, force: bool = False) -> None:
        """Name what runs now (shown after the bar; redrawn at most 4 times a second unless ``force``)."""
        if self._bar is None:
            return
        now = time.monotonic()
        if force or now - self._last >= 0.25:
            self._last = now
            self._bar.set_postfix_str(text, refresh=True)

    def write(self, line: str) -> None:
        """Print ``line`` to stdout, keeping the bar intact below it."""
        if self._bar is None:
            print(line, flush=True)
        else:
            from tqdm import tqdm

            tqdm.write(line, file=sys.stdout)
            sys.stdout.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress(
    total: float | None = None,
    *,
    desc: str,
    unit: str = "it",
    enabled: bool | None = None,
    fraction: bool = False,
    eta: bool = True,
    leave: bool = False,
) -> Progress:
    """A `Progress` bar: ``total`` units (None: unknown, elapsed time only), labelled ``desc``; shown
    only on a terminal unless ``enabled`` says otherwise; ``fraction=True`` for a total of 1.0 shown
    as a percentage; ``eta=False`` for units of very unequal cost (counts and elapsed time only);
    ``leave=True`` keeps the finished bar on the terminal."""
    return Progress(
        total, desc=desc, unit=unit, enabled=enabled, fraction=fraction, eta=eta, leave=leave
    )
