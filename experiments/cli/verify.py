"""``mdcert verify PROBLEM CERT``: re-check every claim of a certificate with the independent checker.

Exit 0 when every claim is verified, 1 (with the first failing claim) otherwise or on bad input.
``--p``, ``--svm`` and ``--alpha`` reject a certificate about anything else. Without ``--alpha``, a
certificate whose alpha differs from the one stored in the problem file is still verified (it proves
what it claims), with a note on stderr. ``--export-w W.npy`` / ``--export-direction U.npy`` write the
verified solution as float64 arrays (as in ``mdcert certify``), only when every claim is verified.
"""

from __future__ import annotations

import argparse

HELP = "independently re-check every claim of a certificate against the data (exit 0 verified, 1 otherwise)"


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.verify import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, re-check (`experiments.commands.verify`), write the exports, print the verdict."""
    import sys

    from experiments.commands.verify import Config, run as run_command
    from experiments.runtime.terminal import terminal_width

    result = run_command(Config.from_options(vars(args)))
    result.write()
    for line in result.lines(terminal_width()):
        print(line)
    for line in result.messages():
        print(line, file=sys.stderr)
    return result.exit_code
