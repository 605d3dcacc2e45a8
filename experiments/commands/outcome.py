"""How a command's outcome reaches the user, shared by the CLI (`experiments.cli.main`) and the
sweep's workers (`experiments.sweep.worker`): the one-line form of an exception, suspicious-input
warnings as one line each, and the exit code of an exception (docs/architecture.md, "the shape of
a command"): bad input 1, Ctrl-C 130, a missing optional dependency 1 with what to install, any
other exception 70 (a bug).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator, Mapping

__all__ = ["BAD_INPUT", "one_line", "input_warnings", "is_bug", "exit_code_for"]

#: exceptions that mean bad input (exit 1), never a bug
BAD_INPUT: tuple[type[BaseException], ...] = (ValueError, FloatingPointError, OSError, MemoryError)


def one_line(exc: BaseException | Warning | str) -> str:
    """The first line of an exception's message, with an actionable form for OS and memory errors."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename!r}" if exc.filename is not None else " while reading an input"
        return f"{exc.strerror}{where}; check the path and its permissions"
    text = str(exc).strip()
    msg = text.splitlines()[0] if text else type(exc).__name__
    if isinstance(exc, MemoryError):
        return f"out of memory ({msg}); reduce the problem size, trials or steps"
    return msg


@contextlib.contextmanager
def input_warnings(command: str) -> Iterator[None]:
    """Each `certify.errors.InputWarning` (suspicious input) as one line ``mdcert CMD: warning: ...``
    on stderr; other warnings as Python shows them."""
    import warnings

    from certify.errors import InputWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, InputWarning):
            print(f"mdcert {command}: warning: {one_line(message)}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        yield


def is_bug(exc: BaseException, *, extras: Mapping[str, str] | None = None) -> bool:
    """Whether ``exc`` is an unexpected exception (exit 70): not bad input, not Ctrl-C, not a missing
    optional dependency that ``extras`` names."""
    from certify.errors import MdcertError

    if isinstance(exc, (MdcertError, *BAD_INPUT, KeyboardInterrupt)):
        return False
    if isinstance(exc, ModuleNotFoundError):
        return (extras or {}).get((exc.name or "").partition(".")[0]) is None
    return True


def exit_code_for(
    command: str,
    exc: BaseException,
    *,
    extras: Mapping[str, str] | None = None,
    host: str | None = None,
    bug_hint: str = "",
) -> int:
    """Print the one stderr line of ``exc`` raised by ``mdcert command``; its exit code.

    Args:
        extras: optional dependency (top-level import name) -> the pyproject extra installing it.
        host: a sweep worker's host name: a missing dependency is then reported as missing on that
            worker (every worker needs the same extras).
        bug_hint: appended to the line of an unexpected exception (exit 70).
    """
    from certify.errors import MdcertError

    if isinstance(exc, (MdcertError, *BAD_INPUT)):
        print(f"mdcert {command}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    if isinstance(exc, KeyboardInterrupt):
        print(f"mdcert {command}: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, ModuleNotFoundError):
        if host is not None:
            print(
                f"mdcert {command}: error: this command needs {exc.name}, which is not installed on "
                f"{host}; install the same mdcert extras on every worker",
                file=sys.stderr,
            )
            return 1
        extra = (extras or {}).get((exc.name or "").partition(".")[0])
        if extra is not None:
            print(
                f"mdcert {command}: error: this command needs {exc.name}, which is not installed; "
                f"install it with: pip install 'mdcert[{extra}]'",
                file=sys.stderr,
            )
            return 1
    print(
        f"mdcert {command}: internal error: {type(exc).__name__}: {one_line(exc)}{bug_hint}",
        file=sys.stderr,
    )
    return 70
