"""``mdcert check``: check a theorem's hypotheses on a problem (HOLDS / FAILS / UNDECIDED +
evidence). Argument parsing and printing only; the command is `experiments.commands.check` (its
docstring describes the options). Exit 0 when the check ran (whatever the verdicts), 1 on bad input.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["HELP", "configure", "run"]

HELP = "check a theorem's hypotheses (HOLDS / FAILS / UNDECIDED) with certified evidence"


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.check import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from experiments.commands.check import Config, run as check
    from experiments.runtime.terminal import terminal_width

    config = Config.from_options(vars(args))
    result = check(config)
    print("\n".join(result.lines(terminal_width())))
    if config.json is not None:
        result.write(config.json)
        print(f"wrote {config.json}", file=sys.stderr)
    return result.exit_code
