"""``mdcert paths``: batched mirror-descent training paths and certified directional Bregman rates.

Argument parsing only: the options, their validation and the work are `experiments.commands.paths`
(its docstring describes the study, the outputs and the terminal summary).
"""

from __future__ import annotations

import argparse
import sys

from experiments.commands.paths import add_arguments

HELP = "batched mirror-descent training paths, certified directional Bregman rates (paper's synthetic study)"

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert paths`` (`experiments.commands.paths.add_arguments`)."""
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, run, write the run directory, print the summary; the exit code."""
    from experiments.commands.paths import Config, run as run_paths
    from experiments.runtime.terminal import terminal_width

    config = Config.from_options(vars(args) | {"argv": sys.argv[1:] if sys.argv else []})
    result = run_paths(config)
    result.write(config.out)
    print("\n".join(result.lines(terminal_width())))
    return result.exit_code
