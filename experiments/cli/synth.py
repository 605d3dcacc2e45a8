"""``mdcert synth``: write the paper's seeded synthetic problem, or (``--classification``) a seeded
classification problem: planted separable (default) or random labels (docs/theory.md section 7).

Argument parsing only: the options, their validation and the work are `experiments.commands.synth`.
"""

from __future__ import annotations

import argparse

HELP = (
    "write a seeded synthetic problem: unit-sphere tokens and z, random labels, unit decoder; or with "
    "--classification a labelled point set (planted separable or random)"
)

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.synth import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, build, save, print the one line."""
    from experiments.commands.synth import Config, run as run_command

    result = run_command(Config.from_options(vars(args)))
    result.write()
    print("\n".join(result.lines()))
    return result.exit_code
