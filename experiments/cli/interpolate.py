"""``mdcert interpolate PROBLEM --p P``: certified minimum-l_p-norm interpolation (docs/theory.md section 8.3).

Reads a regression problem (``kind = "regression"``, X and y; docs/formats.md), certifies
``min ||beta||_p s.t. X beta = y`` and re-checks the certificate with the independent checker before
writing it. Exit 0 optimal, 3 when the system X beta = y is proven inconsistent (the certificate is
written), 2 when nothing could be verified, 1 on bad input. ``--synth block|gaussian`` writes a seeded
problem first (``--N``, ``--D``, ``--seed``) to the PROBLEM path. ``--potential psi --alpha A`` certifies
instead the gradient-descent limit ``min Q_alpha(beta) s.t. X beta = y`` of a depth-2 diagonal network
from ``w+- = alpha 1`` (docs/theory.md section 8.9).
"""

from __future__ import annotations

import argparse

HELP = "certified minimum-l_p-norm interpolation min ||beta||_p s.t. X beta = y (regression data)"


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.interpolate import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, certify and re-check (`experiments.commands.interpolate`), write, summarize."""
    import sys

    from experiments.commands.interpolate import Config, run as run_command
    from experiments.runtime.terminal import terminal_width

    result = run_command(Config.from_options(vars(args)))
    result.write()
    for line in result.lines(terminal_width()):
        print(line)
    for line in result.messages():
        print(line, file=sys.stderr)
    return result.exit_code
