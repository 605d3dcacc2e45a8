"""Job kinds of ``mdcert sweep``: what one grid point runs, as the argv of a single mdcert command.

A `JobKind` names the sub-command, its grid parameters (`Param`: type, flag, validation), where the
command writes its output inside the job's record directory, which exit codes are a finished job,
and how to read a verdict from the output for the summary. The registry `KINDS` maps a kind's name
to ``"module:ATTRIBUTE"`` and is imported lazily (in the driver and in every worker), so adding a
kind is one module that defines a `JobKind` and one line here, e.g. a study kind
``"study": "experiments.sweep.study_kind:STUDY"`` with parameters optimizer x lr x seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, Mapping

from certify.lazy import lazy_registry

__all__ = ["ParamType", "Param", "JobKind", "KINDS", "get_kind", "kind_names"]


class ParamType(Enum):
    """How a grid value is read from the SPEC and passed on the command line."""

    TEXT = "text"        #: a string (a TOML integer is accepted and written in decimal)
    DECIMAL = "decimal"  #: an exact decimal string; TOML numbers are read through their shortest repr
    INT = "int"          #: an integer (a ``{start, stop, step}`` table expands to a range)
    FLOAT = "float"      #: a finite number
    BOOL = "bool"        #: a flag: true passes it, false leaves it out
    FILE = "file"        #: an input file, relative to the SPEC; hashed into the job's key


@dataclass(frozen=True)
class Param:
    """One grid parameter of a kind.

    Attributes:
        name: the SPEC key (``grid.NAME``).
        type: how values are read and validated.
        flag: the command-line option (``"--p"``); None for the positional argument.
        required: the grid must give it.
        choices: allowed values (TEXT), empty for any.
        convert: turns a SPEC value of another shape into the command's text (alpha's list of
            indices becomes ``"0,3,1"``), applied before the type check.
        check: extra validation of one value (raises `MdcertError` with one line).
    """

    name: str
    type: ParamType
    flag: str | None
    required: bool = False
    choices: tuple[str, ...] = ()
    convert: Callable[[object], object] | None = None
    check: Callable[[object], None] | None = None


@dataclass(frozen=True)
class JobKind:
    """A kind of sweep job: one run of the mdcert command ``command`` per grid point.

    Attributes:
        name: the SPEC's ``kind``.
        command: the mdcert sub-command every job runs (through `experiments.cli.main.main`).
        params: the grid parameters it accepts.
        output_flag, output_name: the command writes ``output_flag RECORD/output_name``.
        ok_codes: exit codes of a finished job (certify's 2 and 3 are answers, not failures).
        verdict: reads the finished job's verdict label from its record directory and exit code.
        verdicts: the labels `verdict` can return, in the figure's order; empty for no figure.
        extra_argv: fixed arguments appended to every job's argv.
        preload: modules a worker imports once before its first job (start-up, not job time).
        validate: checks one job's argv with the command's own parser and validation (raises
            `MdcertError` with the command's one line); run on every grid point before any job.
    """

    name: str
    command: str
    params: tuple[Param, ...]
    output_flag: str
    output_name: str
    ok_codes: frozenset[int]
    verdict: Callable[[Path, int], str]
    verdicts: tuple[str, ...] = ()
    extra_argv: tuple[str, ...] = field(default=())
    preload: tuple[str, ...] = field(default=())
    validate: Callable[[list[str]], None] | None = None

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        for p in self.params:
            if p.name == name:
                return p
        return None

    def argv(self, values: Mapping[str, object], record: str | Path) -> list[str]:
        """The command line of one job, writing its output inside the directory ``record``.

        ``values`` maps parameter names to grid values already converted by the SPEC reader
        (strings, ints, floats, bools; files as absolute paths).
        """
        argv = [self.command]
        for p in self.params:
            if p.flag is None and p.name in values:
                argv.append(str(values[p.name]))
        for p in self.params:
            if p.flag is None or p.name not in values:
                continue
            value = values[p.name]
            if p.type is ParamType.BOOL:
                if value:
                    argv.append(p.flag)
            else:
                argv.append(f"{p.flag}={value}")   # attached: a value like -1 stays a value
        argv.extend(self.extra_argv)
        argv += [self.output_flag, str(Path(record) / self.output_name)]
        return argv


#: kind name -> "module:ATTRIBUTE" defining its `JobKind` (imported on first use)
KINDS: dict[str, str] = {
    "certify": "experiments.sweep.commands:CERTIFY",
    "check": "experiments.sweep.commands:CHECK",
    "synth": "experiments.sweep.commands:SYNTH",
    "paths": "experiments.sweep.commands:PATHS",
    "study": "experiments.sweep.study_kind:STUDY",
}

_lookup = lazy_registry("sweep kind", KINDS, JobKind)


def kind_names() -> list[str]:
    """The registered kinds, in registry order."""
    return list(KINDS)


def get_kind(name: str) -> JobKind:
    """The `JobKind` registered as ``name``.

    Raises:
        MdcertError: no such kind (the message lists the known ones).
    """
    return _lookup(name)
