"""Start a child as a terminal's foreground job would have it, for the Ctrl-C tests."""

from __future__ import annotations

import signal

__all__ = ["as_from_a_terminal"]


def as_from_a_terminal() -> None:
    """In the child before exec: SIGINT handled by default and not blocked, as a shell's foreground job
    has it. A test runner started in the background of a non-interactive shell (``cmd &``) ignores
    SIGINT, every child inherits that, and Python then keeps ignoring it: the command never saw the
    Ctrl-C and the test failed after its timeout, depending only on how the suite was launched."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
