"""TEST DOUBLE: a tiny command of the application layer's shape (`experiments.commands`) and its
sweep kind, for the sweep's tests of the whole path (validation up front, run in the worker, write,
failure records, exit codes) while no real command is registered in ``COMMAND_MODULES``.

``fake PROBLEM --n N --p P --mode MODE [--loud] -o OUT``: the problem file's size in bytes times N.
Modes: ``ok``; ``answer`` (exit 2, an answer like certify's infeasible); ``fails`` (exit 5, a code
the kind does not accept); ``bad`` (bad input found while running: one line, exit 1); ``boom`` (a
bug: exit 70); ``warn`` (an `InputWarning`, then ok); ``noextra`` (an optional dependency missing:
exit 1). Config refuses N outside 1..100 and p <= 1 before anything runs.

A test registers it with ``monkeypatch`` (`register` in this process); a sweep's worker process
imports this module as its kind's preload, which registers it there (``setdefault``).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from certify.errors import InputWarning, MdcertError
from certify.io.atomic import write_text_atomic

from experiments.commands import COMMAND_MODULES
from experiments.sweep.kinds import KINDS, JobKind

__all__ = ["NAME", "add_arguments", "Config", "Result", "run", "FAKE", "register"]

NAME = "fake"
MODES = ("ok", "answer", "fails", "bad", "boom", "warn", "noextra")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="an input file")
    parser.add_argument("--n", type=int, default=1, help="a factor, 1 to 100")
    parser.add_argument("--p", default="2", help="an exact decimal > 1")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument(
        "--loud", action="store_true", help="also print to stdout and stderr while running"
    )
    parser.add_argument("-o", "--output", default=None, help="result JSON")


@dataclass(frozen=True)
class Config:
    problem: Path
    n: int
    p: Fraction
    mode: str
    loud: bool

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        n = int(options["n"])
        if not 1 <= n <= 100:
            raise MdcertError(f"--n must be between 1 and 100, got {n}")
        try:
            p = Fraction(str(options["p"]))
        except ValueError:
            raise MdcertError(f"--p must be an exact decimal, got {options['p']!r}") from None
        if p <= 1:
            raise MdcertError(f"--p must be > 1, got {options['p']!r}")
        return cls(
            problem=Path(options["problem"]),
            n=n,
            p=p,
            mode=str(options["mode"]),
            loud=bool(options["loud"]),
        )


@dataclass(frozen=True)
class Result:
    value: int
    p: str
    exit_code: int

    def write(self, out: str | Path) -> None:
        write_text_atomic(Path(out), json.dumps({"value": self.value, "p": self.p}))

    def lines(self, width: int) -> list[str]:
        return [f"value: {self.value}"[:width], f"p: {self.p}"[:width]]


def run(config: Config) -> Result:
    if config.loud:
        print(f"running on stdout: {' '.join(sys.argv[1:3])}")
        print("running on stderr", file=sys.stderr)
    if config.mode == "bad":
        raise MdcertError(f"{config.problem.name} is refused while running")
    if config.mode == "boom":
        return 1 // 0  # type: ignore[return-value]
    if config.mode == "noextra":
        raise ModuleNotFoundError("No module named 'torch'", name="torch")
    if config.mode == "warn":
        warnings.warn(f"{config.problem.name} looks suspicious", InputWarning, stacklevel=1)
    value = config.problem.stat().st_size * config.n
    return Result(
        value=value, p=str(config.p), exit_code={"answer": 2, "fails": 5}.get(config.mode, 0)
    )


def parity(record: Path, code: int) -> str:
    """The verdict: ``even`` or ``odd`` value."""
    return "even" if json.loads((record / "fake.json").read_text())["value"] % 2 == 0 else "odd"


FAKE = JobKind(
    name=NAME,
    command=NAME,
    grid=("problem", "n", "p", "mode", "loud"),
    files=("problem",),
    decimals=("p",),
    output_flag="-o",
    output_name="fake.json",
    ok_codes=frozenset({0, 2}),
    verdict=parity,
    verdicts=("even", "odd"),
)


def register() -> None:
    """Register the command and its kind in this process unless a test already did."""
    COMMAND_MODULES.setdefault(NAME, __name__)
    KINDS.setdefault(NAME, f"{__name__}:FAKE")


register()
