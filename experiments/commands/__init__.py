"""The application layer: one shape for every command (docs/architecture.md, "one shape").

Each command NAME with library logic has a module ``experiments.commands.NAME`` holding:

- ``add_arguments(parser: argparse.ArgumentParser) -> None``: the command's options, the one
  schema of the command (the CLI and the sweep both build their parser from it);
- a frozen dataclass ``Config`` with ``Config.from_options(options: Mapping[str, Any]) -> Config``
  that validates every option (one `certify.errors.MdcertError` / ValueError line on bad input,
  before any work starts) and keyword-only fields;
- ``run(config: Config) -> Result``: the work, with no printing of results and no argparse;
- ``Result`` with ``write(out) -> None`` (through the atomic writer; nothing half-written) and
  ``lines(width: int) -> list[str]`` (the terminal summary) and ``exit_code`` (0 unless the command's
  own result says otherwise, e.g. a FAILS verdict).

`parse(name, argv)` builds a config from an argv list with the command's own parser (what the sweep
does for a grid point); ``experiments/cli/NAME.py`` is argument parsing plus a few lines:
``config = Config.from_options(vars(args)); result = run(config); result.write(...); print(...)``.
Nothing below ``experiments/cli/`` takes an ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, Sequence

__all__ = ["COMMAND_MODULES", "module", "parse"]

#: command name -> module of the application layer (filled as commands move here)
COMMAND_MODULES: dict[str, str] = {
    "regpath": "experiments.commands.regpath",
    "check": "experiments.commands.check",
    "paths": "experiments.commands.paths",
    "certify": "experiments.commands.certify",
    "data": "experiments.commands.data",
    "demo": "experiments.commands.demo",
    "interpolate": "experiments.commands.interpolate",
    "signdescent": "experiments.commands.signdescent",
    "verify": "experiments.commands.verify",
    "study": "experiments.commands.study",
    "synth": "experiments.commands.synth",
    "pgd": "experiments.commands.pgd",
}


def module(name: str):
    """The application-layer module of command ``name`` (KeyError when it has none)."""
    return importlib.import_module(COMMAND_MODULES[name])


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose errors raise ValueError (one line) instead of exiting the process."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        raise ValueError(" ".join(str(message).split()))


def parse(name: str, argv: Sequence[str]) -> Any:
    """``Config`` of command ``name`` from ``argv`` (the command's own parser and validation)."""
    mod = module(name)
    parser = _OneLineParser(prog=f"mdcert {name}", add_help=False)
    mod.add_arguments(parser)
    return mod.Config.from_options(vars(parser.parse_args(list(argv))))
