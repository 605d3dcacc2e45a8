"""experiments.commands.outcome: one stderr line and an exit code per exception, the same for the
CLI and for a sweep's worker."""

from __future__ import annotations

import re
import warnings

import pytest

from certify.errors import InputWarning, MdcertError
from experiments.commands.outcome import exit_code_for, input_warnings, is_bug

CASES = [
    (MdcertError("bad --p"), {}, None, 1, r"^mdcert cmd: error: bad --p$"),
    (ValueError("first\nsecond"), {}, None, 1, r"^mdcert cmd: error: first$"),
    (
        FileNotFoundError(2, "No such file or directory", "x.npz"),
        {},
        None,
        1,
        r"No such file or directory: 'x.npz'; check the path and its permissions$",
    ),
    (MemoryError("big"), {}, None, 1, r"out of memory \(big\); reduce the problem size"),
    (KeyboardInterrupt(), {}, None, 130, r"^mdcert cmd: interrupted$"),
    (
        ModuleNotFoundError("no torch", name="torch"),
        {"torch": "train"},
        None,
        1,
        r"needs torch, which is not installed; install it with: pip install 'mdcert\[train\]'$",
    ),
    (
        ModuleNotFoundError("no torch", name="torch"),
        {},
        "node7",
        1,
        r"not installed on node7; install the same",
    ),
    (
        ModuleNotFoundError("no foo", name="foo"),
        {"torch": "train"},
        None,
        70,
        r"internal error: ModuleNotFoundError",
    ),
    (
        ZeroDivisionError("division by zero"),
        {},
        None,
        70,
        r"^mdcert cmd: internal error: ZeroDivisionError: div",
    ),
]


@pytest.mark.parametrize("exc,extras,host,code,pattern", CASES)
def test_each_exception_is_one_line_and_its_code(capsys, exc, extras, host, code, pattern) -> None:
    assert exit_code_for("cmd", exc, extras=extras, host=host) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(pattern, err.strip())
    if host is None:  # the CLI raises a bug under MDCERT_TRACEBACK=1
        assert is_bug(exc, extras=extras) == (code == 70)


def test_an_input_warning_is_one_line_and_others_pass_through(capsys) -> None:
    with input_warnings("cmd"):
        warnings.warn("trailing zero tokens\nwithout lengths", InputWarning, stacklevel=1)
    assert capsys.readouterr().err == "mdcert cmd: warning: trailing zero tokens\n"
