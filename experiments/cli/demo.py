"""``mdcert demo``: the main job end to end on a built-in example (the paper-size synthetic problem).

Each stage runs the same code path as its own command (``synth``, ``certify``, ``verify``, ``check``,
``paths``, ``plot``), so the demo is also a smoke test of the whole toolkit. The check stage states
what its verdicts are about: the region's mu and R are inputs (a HOLDS on ``init_in_region`` holds for
the given mu and R), and the data quantities they depend on are printed (docs/theory.md section 5.4).
With ``-o DIR`` every output, figures included (``DIR/paths/*.png``), is kept and named; without it
they live in a temporary directory that is removed, and the demo says so instead of pointing to them.
"""

from __future__ import annotations

import argparse

HELP = "run the main job on a built-in example: synthesize, certify, verify, check hypotheses, train, plot"


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.demo import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, run every stage (`experiments.commands.demo`) through this CLI's ``main``, summarize."""
    import sys

    from experiments.cli.main import main
    from experiments.commands.demo import Config, run as demo
    from experiments.runtime.terminal import terminal_width

    result = demo(Config.from_options(vars(args)), runner=main)
    result.write()
    for line in result.lines(terminal_width()):
        print(line)
    for line in result.messages():
        print(line, file=sys.stderr)
    return result.exit_code
