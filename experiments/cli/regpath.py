"""``mdcert regpath``: regularization paths W(R) (Theorem 6) and joint (W, v) paths (Theorem 31).

Argument parsing only; the command is `experiments.commands.regpath` (options, validation, the run
and its outputs). Writes ``RUN/summary.json`` (``"kind": "regpath"``, one ``path`` entry per radius)
and ``RUN/path.npz`` (the solutions) as one run directory, renamed into place when complete.
Everything that can fail on bad input (radii, p, alpha, r(R), an infeasible or tied reference)
fails before anything is written.
"""

from __future__ import annotations

import argparse

from experiments.commands.regpath import add_arguments

HELP = (
    "regularization paths W(R) = argmin_{||W||_p <= R} L(W) vs the certified SVM "
    "(Theorems 6 and 31)"
)

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert regpath`` (`experiments.commands.regpath.add_arguments`)."""
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, compute the path, write the run directory, print the summary; the exit code."""
    from experiments.commands.regpath import Config, run as regpath
    from experiments.runtime.terminal import terminal_width

    config = Config.from_options(vars(args))
    result = regpath(config)
    result.write(config.output)
    for line in result.lines(terminal_width()):
        print(line)
    return result.exit_code
