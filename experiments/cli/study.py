"""``mdcert study KIND -o DIR``: the paper's transformer experiments (sentiment encoder, small ViT)
and the real-data study, offline, resumable (docs/theory.md sections 6.5 and 6.6; the directory:
docs/formats.md). Argument parsing only: the work is `experiments.commands.study`.

Ctrl-C kills the worker processes at once, keeps every finished run, prints one line and exits 130.
"""

from __future__ import annotations

import argparse
import sys

HELP = (
    "offline studies with seeds and intervals: the attention paper's transformers (sentiment, "
    "vision), certified real-data frontiers (realdata), p-GD on small nets (pgd), smoothed sign "
    "descent (signdescent)"
)

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.commands.study import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.kind == "signdescent":  # `mdcert signdescent --preset paper` under the study name
        from experiments.cli import signdescent

        argv = ["--preset", "paper", "-o", args.out]
        argv += ["--quick"] * args.quick + ["--no-figures"] * args.no_figures
        argv += ["--overwrite"] * args.overwrite
        argv += [] if args.threads is None else ["--threads", str(args.threads)]
        parser = argparse.ArgumentParser(prog="mdcert study signdescent")
        signdescent.configure(parser)
        return signdescent.run(parser.parse_args(argv))
    from experiments.commands.study import Config, run as run_study
    from experiments.runtime.terminal import terminal_width

    result = run_study(Config.from_options(vars(args)))
    result.write(args.out)
    if result.interrupted:
        print(result.notice(), file=sys.stderr, flush=True)
        # the interpreter's final collections would traverse the loaded corpus (2.8 s of a loaded
        # machine's exit at load 14; 0.7 s frozen): Ctrl-C must end within seconds
        import gc

        gc.freeze()
    for line in result.lines(terminal_width()):
        print(line)
    return result.exit_code
