"""``mdcert certify``: certified l_p attention-SVM / decoder-SVM solution (issue 3 item 7), or the
certified l_p max-margin classifier of a classification problem file (``kind = classification``,
docs/formats.md; docs/theory.md section 7).

Exit codes: 0 certified (status optimal) to the requested digits, 3 infeasible (a Gordan certificate
of infeasibility is written), 2 no verified result (nothing proven; the certificate says so) or an
optimal certificate short of the requested digits (said on stderr; the certificate proves what it
says), 1 bad input.

``--export-w W.npy`` also writes the certified feasible point as a float64 ``.npy`` (attention SVM:
W, d x d, row-major; decoder SVM: v, length d; binary: w, length d; multiclass: W, K x d) and ``--export-direction U.npy`` its unit direction,
with their rigorous distances to the optimum printed (`certify.export`, docs/theory.md section 4.2),
after the independent checker has accepted the certificate. Neither is written when nothing was
certified.
"""

from __future__ import annotations

import argparse

HELP = (
    "certified l_p SVM solution (OPT enclosure, direction error, support); exit 0 certified, "
    "3 infeasible (certificate written), 2 no verified result or digits not reached, 1 bad input"
)


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.certify import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, certify (`experiments.commands.certify`), write, then print the summary."""
    import sys

    from experiments.commands.certify import Config, run as certify
    from experiments.runtime.terminal import terminal_width

    result = certify(Config.from_options(vars(args)))
    result.write()
    print("\n".join(result.lines(terminal_width())))
    for line in result.messages():
        print(line, file=sys.stderr)
    return result.exit_code
