"""Error types shared by every mdcert package.

`MdcertError` is the one exception type for bad input: its message is a single line that says
what is wrong and how to fix it. The CLI turns it into ``error: <message>`` and exit code 1.
"""

from __future__ import annotations

__all__ = ["MdcertError", "InputWarning"]


class MdcertError(ValueError):
    """Bad user input (shapes, non-finite values, labels, exponents, files).

    Subclasses ValueError so library callers can catch either.
    """


class InputWarning(UserWarning):
    """Suspicious but valid input (zero padding without ``lengths``, duplicated tokens): one line that
    says what looks wrong and how to declare it. ``mdcert`` prints it as ``mdcert CMD: warning: ...``."""
