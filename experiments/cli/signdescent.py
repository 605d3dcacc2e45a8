"""``mdcert signdescent``: diagonal-network paths of gd / smoothed sign / Adam with certified references.

``mdcert signdescent PROBLEM --rules sign,adam --eps 1e-3,1e-2,0.025 --alpha 0.1 --lr 1e-3 --steps 100000
-o RUN`` (or ``--synth block --N 5`` to write a seeded regression problem to PROBLEM first). Writes
``RUN/summary.json``, ``RUN/paths.npz`` and, when matplotlib is installed, ``RUN/*.png``
(docs/formats.md) through a temporary directory renamed when complete; the terminal gets one line
per trajectory. The work is `experiments.diagnet.study.run_signdescent`.

``mdcert signdescent --preset paper [--quick] -o RUN``: the set-ups of arXiv 2410.14158 (no PROBLEM;
`experiments.diagnet.paper`), with ``RUN/report.md``; resumable (finished parts are reused).

Exit codes: 0 done; 1 bad input (one line on stderr, nothing written), which includes a system
``X beta = y`` proven inconsistent (the certified references do not exist). Data outside the paper's
setting (N >= D, a zero target) gets a warning on stderr and still runs.
"""

from __future__ import annotations

import argparse

HELP = "diagonal-network paths (gd, smoothed sign, Adam) against certified interpolators and delta-KKT bounds"


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.signdescent import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, train and certify (`experiments.commands.signdescent`), write the run, summarize."""
    import sys

    from experiments.commands.signdescent import Config, run as run_command
    from experiments.runtime.terminal import terminal_width

    result = run_command(
        Config.from_options(vars(args)), warn=lambda line: print(line, file=sys.stderr)
    )
    result.write()
    for line in result.lines(terminal_width()):
        print(line)
    return result.exit_code
