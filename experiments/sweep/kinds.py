"""Job kinds of ``mdcert sweep``: what one grid point runs, as the argv of a single mdcert command.

A `JobKind` holds only the sweep's own facts about a command: which of its options the grid may
sweep (and under which SPEC name), which of them are input files (hashed into the job's key), which
option names the output inside the job's record directory, which exit codes are a finished job, and
how to read a verdict for the summary. The options themselves (flag, type, choices, required) are
read from the command's own parser (`grid_params`), and a grid point is validated by
the command's own `Config` (`experiments.commands.parse`) before any job starts, so the sweep
restates no option of any command.

The registry `KINDS` maps a kind's name to ``"module:ATTRIBUTE"`` and is imported lazily (in the
driver and in every worker), so adding a kind is one module that defines a `JobKind` and one line here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Mapping

from certify.errors import MdcertError
from certify.lazy import lazy_registry

__all__ = [
    "ParamType",
    "Param",
    "JobKind",
    "KINDS",
    "get_kind",
    "kind_names",
    "command_parser",
    "grid_params",
]


class ParamType(Enum):
    """How a grid value is read from the SPEC and passed on the command line."""

    TEXT = "text"  #: a string (a TOML integer is accepted and written in decimal)
    DECIMAL = (
        "decimal"  #: an exact decimal string; TOML numbers are read through their shortest repr
    )
    INT = "int"  #: an integer (a ``{start, stop, step}`` table expands to a range)
    FLOAT = "float"  #: a finite number
    BOOL = "bool"  #: a flag: true passes it, false leaves it out
    FILE = "file"  #: an input file, relative to the SPEC; hashed into the job's key


@dataclass(frozen=True)
class Param:
    """One grid parameter of a kind, as read from the command's parser.

    Attributes:
        name: the SPEC key (``grid.NAME``).
        type: how values are read from the SPEC.
        flag: the command-line option (``"--p"``); None for the positional argument.
        required: the grid must give it.
        choices: allowed values (TEXT), empty for any.
        convert: turns a SPEC value of another shape into the command's text (alpha's list of
            indices becomes ``"0,3,1"``), applied before the type check.
    """

    name: str
    type: ParamType
    flag: str | None
    required: bool = False
    choices: tuple[str, ...] = ()
    convert: Callable[[object], object] | None = None


@dataclass(frozen=True)
class JobKind:
    """A kind of sweep job: one run of the mdcert command ``command`` per grid point.

    Attributes:
        name: the SPEC's ``kind``.
        command: the mdcert command every job runs (`experiments.commands.module(command).run`).
        grid: the SPEC names of the options the grid may sweep, in the order the SPEC errors list them.
        output_flag, output_name: the command writes ``output_flag RECORD/output_name``; the worker
            hands ``RECORD/output_name`` to the command's ``Result.write``.
        ok_codes: exit codes of a finished job (certify's 2 and 3 are answers, not failures).
        verdict: reads the finished job's verdict label from its record directory and exit code.
        verdicts: the labels `verdict` can return, in the figure's order; empty for no figure.
        dests: SPEC name -> the parser's ``dest`` where they differ (``problem`` -> ``problems``).
        files: SPEC names whose values are input files (relative to the SPEC, hashed into the key).
        decimals: SPEC names read as exact decimals (a TOML number through its shortest repr).
        required: SPEC names the grid must give beyond the parser's required ones.
        convert: SPEC name -> conversion of a SPEC value of another shape into the command's text.
        extra_argv: fixed arguments appended to every job's argv.
        preload: modules a worker imports once before its first job (start-up, not job time).
    """

    name: str
    command: str
    grid: tuple[str, ...]
    output_flag: str
    output_name: str
    ok_codes: frozenset[int]
    verdict: Callable[[Path, int], str]
    verdicts: tuple[str, ...] = ()
    dests: Mapping[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    decimals: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    convert: Mapping[str, Callable[[object], object]] = field(default_factory=dict)
    extra_argv: tuple[str, ...] = field(default=())
    preload: tuple[str, ...] = field(default=())

    @cached_property
    def params(self) -> tuple[Param, ...]:
        """The grid parameters, read from the command's own parser (`grid_params`)."""
        return grid_params(self)

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        for p in self.params:
            if p.name == name:
                return p
        return None

    def validate(self, argv: list[str]) -> None:
        """Check one job's argv with the command's own parser and validation (raises `MdcertError`
        or ValueError with the command's one line)."""
        from experiments.commands import parse

        parse(self.command, argv[1:])

    def worker_preload(self) -> tuple[str, ...]:
        """What a worker imports before its first job: ``preload`` and the command's module."""
        from experiments.commands import COMMAND_MODULES

        return self.preload + (
            "experiments.commands",
            "experiments.commands.outcome",
            COMMAND_MODULES[self.command],
        )

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
                argv.append(f"{p.flag}={value}")  # attached: a value like -1 stays a value
        argv.extend(self.extra_argv)
        argv += [self.output_flag, str(Path(record) / self.output_name)]
        return argv


def command_parser(command: str) -> argparse.ArgumentParser:
    """A parser holding the options of ``command`` (its ``add_arguments``)."""
    from experiments.commands import module

    parser = argparse.ArgumentParser(prog=f"mdcert {command}", add_help=False)
    module(command).add_arguments(parser)
    return parser


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Every action of ``parser`` and of its sub-parsers (a command with sub-commands: study)."""
    for action in parser._actions:  # noqa: SLF001 - argparse has no public list of its actions
        yield action
        if isinstance(action.choices, dict):  # sub-commands: name -> parser
            for sub in dict.fromkeys(action.choices.values()):
                if isinstance(sub, argparse.ArgumentParser):
                    yield from _actions(sub)


def _flag(action: argparse.Action) -> str | None:
    if not action.option_strings:
        return None
    longs = [s for s in action.option_strings if s.startswith("--")]
    return (longs or list(action.option_strings))[0]


def _type(kind: JobKind, name: str, action: argparse.Action) -> ParamType:
    if name in kind.files:
        return ParamType.FILE
    if name in kind.decimals:
        return ParamType.DECIMAL
    if action.option_strings and action.nargs == 0:
        return ParamType.BOOL
    if action.type is int:
        return ParamType.INT
    if action.type is float:
        return ParamType.FLOAT
    return ParamType.TEXT


def grid_params(kind: JobKind) -> tuple[Param, ...]:
    """The grid parameters of ``kind``, in `JobKind.grid`'s order, from its command's parser.

    Raises:
        MdcertError: the command has no option for one of the kind's grid names (the kind is stale).
    """
    by_dest: dict[str, argparse.Action] = {}
    for action in _actions(command_parser(kind.command)):
        by_dest.setdefault(action.dest, action)
    params = []
    for name in kind.grid:
        action = by_dest.get(kind.dests.get(name, name))
        if action is None:
            raise MdcertError(
                f"sweep kind {kind.name!r}: mdcert {kind.command} has no option for grid.{name}"
            )
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        if action.option_strings:
            required = bool(action.required)
        else:  # argparse marks a bare '*' positional required, yet it may be empty
            required = action.nargs not in ("?", "*")
        required = required or name in kind.required
        params.append(
            Param(
                name,
                _type(kind, name, action),
                _flag(action),
                required=required,
                choices=choices,
                convert=kind.convert.get(name),
            )
        )
    return tuple(params)


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
