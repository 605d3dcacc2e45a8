"""``mdcert pgd``: p-GD paths of a linear classifier against the certified l_p max-margin direction.

``mdcert pgd PROBLEM --p 1.5,2,3 --lr 0.1,1 --inits 8 --steps 100000 [--normalize] -o RUN`` on a
classification problem file (docs/formats.md): certifies ``w_p`` per p, runs every trajectory of the
grid p x lr x init as one batched float64 program (`experiments.linear`), and writes
``RUN/summary.json``, ``RUN/arrays.npz`` and ``RUN/pgd.png`` through a temporary directory renamed when
complete (docs/theory.md 7.5). ``--check`` instead checks the hypotheses of the p-GD result
(`theorems.pgd`: separability, the loss, the step size measured along the run's path) and prints one
verdict per hypothesis and p; with ``-o`` it also writes the run. Exit 0 when the run or check
completed (whatever the verdicts), 1 on bad input.

Argument parsing only: the options, their validation and the work are `experiments.commands.pgd`.
"""

from __future__ import annotations

import argparse

HELP = "p-GD paths on a classification problem against the certified l_p max-margin direction (--check: hypotheses)"

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.pgd import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, certify and train, write the run directory, print the summary."""
    from experiments.commands.pgd import Config, run as run_command

    result = run_command(Config.from_options(vars(args)))
    result.write()
    print("\n".join(result.lines()))
    return result.exit_code
