"""TEMPORARY: sweep kinds whose command is not yet in `experiments.commands.COMMAND_MODULES`.

Delete this module (and the few lines that import it, marked "legacy") once every sweep kind's
command has an application-layer module: the sweep then reads each command's options from its
``add_arguments``, validates a grid point with its ``Config`` and runs it with its ``run``.

Until then a kind whose command has no such module is read, validated and run as before issue 22:
its options from the CLI's parser (``experiments.cli.NAME.configure``), its values checked by the
hand-written checks below (restated from the commands, the drift issue 22 removes), a ``paths``
grid point through ``mdcert paths``' own ``parse_config``, and a job through the CLI's
``main(argv)`` in the worker. The CLI is imported by name (`importlib`) so that the import contracts
already hold for the sweep without it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from pathlib import Path
from typing import Callable

from certify.errors import MdcertError

__all__ = ["cli_parser", "cli_modules", "warm_cli", "value_checks", "validate", "run_cli"]

_CLI_MAIN = "experiments.cli.main"
FROM_TRAINING = "locally-optimal-from-training"


class _Refusing(argparse.ArgumentParser):
    """The command's own parser, with its error as an exception instead of an exit."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        raise MdcertError(" ".join(str(message).split()))


def cli_parser(command: str) -> argparse.ArgumentParser:
    """``mdcert COMMAND``'s parser as the CLI builds it (errors raise `MdcertError`)."""
    module_name = importlib.import_module(_CLI_MAIN).COMMANDS[command][0]
    parser = _Refusing(prog=f"mdcert {command}", add_help=False)
    importlib.import_module(module_name).configure(parser)
    return parser


def cli_modules() -> tuple[str, ...]:
    """A worker's preload for a legacy kind: the command line, as `main` builds it."""
    return (f"{__name__}:warm_cli",)


def warm_cli() -> None:
    """Import the command line (every command's parser, as `main` builds it) in a worker."""
    importlib.import_module(_CLI_MAIN).build_parser()


# ------------------------------------------------------------------------------------ value checks
def check_p(value: object) -> None:
    """An exact exponent p > 1 (`certify.exact.parse_p`)."""
    from certify.exact import parse_p

    parse_p(value, name="grid.p")


def check_p_list(value: object) -> None:
    """A comma-separated list of exponents, each > 1 (``mdcert paths --p``)."""
    parts = [s for s in str(value).split(",")]
    if not parts or any(not s.strip() for s in parts):
        raise MdcertError(f"invalid grid.p {value!r}; give exponents like \"1.75\" or \"1.75,2,3\"")
    for s in parts:
        check_p(s.strip())


def _alpha(value: object, named: tuple[str, ...]) -> None:
    text = str(value).strip().lower()
    if text in named:
        return
    parts = text.split(",")
    if not all(s.strip().isdigit() for s in parts):
        raise MdcertError(f"invalid grid.alpha {value!r}; give {' or '.join(repr(n) for n in named)} "
                          f"or token indices like \"0,3,1\" (or [0, 3, 1])")


def _int_range(name: str, lo: int, hi: int) -> Callable[[object], None]:
    def check(value: object) -> None:
        if not lo <= int(value) <= hi:  # type: ignore[arg-type]
            raise MdcertError(f"invalid grid.{name} {value!r}; give an integer between {lo} and {hi}")
    return check


def _nonnegative(name: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        if float(value) < 0:  # type: ignore[arg-type]
            raise MdcertError(f"invalid grid.{name} {value!r}; must be >= 0")
    return check


def _decimal(name: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        from certify.exact import parse_nonnegative

        parse_nonnegative(value, f"grid.{name}")
    return check


def _theorem(value: object) -> None:
    from theorems.catalogue import get_theorem

    get_theorem(value)


def _optimizers(value: object) -> None:
    from experiments.studies.train import parse_optimizer

    for s in str(value).split(","):
        parse_optimizer(s)


def _one_of(name: str, choices: tuple[str, ...]) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value not in choices:
            raise MdcertError(f"grid.{name}: {value!r} is not one of {', '.join(choices)}")
    return check


_SIZE = (1, 10 ** 7)
_DIGITS = _int_range("digits", 1, 2000)


def value_checks(kind: str) -> dict[str, Callable[[object], None]]:
    """The hand-written value checks of the built-in kind ``kind`` (SPEC name -> check)."""
    return {
        "certify": {"p": check_p, "alpha": lambda v: _alpha(v, ("opt",)), "digits": _DIGITS,
                    "time_limit": _nonnegative("time_limit")},
        "check": {"p": check_p, "theorem": _theorem, "alpha": lambda v: _alpha(v, ("opt", FROM_TRAINING)),
                  "lr": _decimal("lr"), "steps": _int_range("steps", 1, 10 ** 9), "mu": _decimal("mu"),
                  "R": _decimal("R"), "digits": _DIGITS},
        "synth": {"n": _int_range("n", *_SIZE), "T": _int_range("T", *_SIZE), "d": _int_range("d", *_SIZE),
                  "seed": _int_range("seed", 0, 2 ** 63 - 1)},
        "paths": {"p": check_p_list, "trials": _int_range("trials", 1, 10 ** 6),
                  "inits": _int_range("inits", 1, 10 ** 6), "seed": _int_range("seed", 0, 2 ** 63 - 1),
                  "records": _int_range("records", 2, 10 ** 6), "digits": _DIGITS,
                  "workers": _int_range("workers", 0, 1024), "device": _one_of("device", ("auto", "cpu", "cuda")),
                  "n": _int_range("n", *_SIZE), "T": _int_range("T", *_SIZE), "d": _int_range("d", *_SIZE)},
        "study": {"optimizers": _optimizers, "lr": _decimal("lr"), "seed": _int_range("seed", 0, 2 ** 31),
                  "seeds": _int_range("seeds", 1, 1000), "epochs": _int_range("epochs", 1, 10 ** 4),
                  "width": _int_range("width", 1, 4096), "train_limit": _int_range("train_limit", 10, 10 ** 7),
                  "test_limit": _int_range("test_limit", 10, 10 ** 7),
                  "finetune_steps": _int_range("finetune_steps", 0, 10 ** 6)},
    }.get(kind, {})


# -------------------------------------------------------------------------------- grid point check
_PARSERS: dict[str, argparse.ArgumentParser] = {}
_DEVICES: dict[str, str | None] = {}


def validate(command: str, argv: list[str]) -> None:
    """One job's argv through the CLI's parser; a ``paths`` job also through `parse_config` (the sizes
    the command reads from the problem file stand in as the smallest valid ones) and its device
    through the command's `resolve_device` (once per device: a CUDA device where CUDA is missing)."""
    if command not in _PARSERS:
        _PARSERS[command] = cli_parser(command)
    args = _PARSERS[command].parse_args(argv[1:])
    if command != "paths":
        return
    from experiments.paths.config import parse_config

    for name, smallest in (("trials", 1), ("inits", 1), ("n", 1), ("T", 2), ("d", 1)):
        if getattr(args, name, None) is None:
            setattr(args, name, smallest)
    device = parse_config(args)["device"]
    if device not in _DEVICES:
        try:
            if device.startswith("cuda"):
                from experiments.paths.engine import resolve_device

                resolve_device(device)
            _DEVICES[device] = None
        except MdcertError as exc:
            _DEVICES[device] = str(exc)
    if _DEVICES[device] is not None:
        raise MdcertError(_DEVICES[device])


# ------------------------------------------------------------------------------------- the worker
def run_cli(argv: list[str], capture: Callable[[Path], contextlib.AbstractContextManager], folder: Path) -> int:
    """Run ``mdcert ARGV`` through the CLI's `main` in this process, its output captured in
    ``folder`` by ``capture``; the exit code."""
    main = importlib.import_module(_CLI_MAIN).main
    old_argv = sys.argv
    sys.argv = ["mdcert", *argv]
    try:
        with capture(folder):
            try:
                return int(main(argv) or 0)
            except SystemExit as exc:          # argparse's own exit
                code = exc.code
                return code if isinstance(code, int) else (0 if code is None else 1)
            except Exception as exc:           # main() turns errors into codes; this is a bug
                print(f"mdcert {argv[0]}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 70
    finally:
        sys.argv = old_argv
