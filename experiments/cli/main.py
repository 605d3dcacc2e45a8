"""The ``mdcert`` console script: one sub-command per module of `experiments.cli`.

Each command module defines ``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``.
Modules are imported only when their command runs, so ``mdcert verify`` never imports torch.
Bad input (`MdcertError`, ValueError, FloatingPointError, OSError, MemoryError) becomes one line
``mdcert CMD: error: ...`` on stderr and exit code 1, never a traceback. Any other exception is a bug:
one line ``mdcert CMD: internal error: ...`` and exit code 70 (set ``MDCERT_TRACEBACK=1`` to see the
traceback). Ctrl-C exits 130; commands write outputs through temporary names, so an interrupted run
leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

__all__ = ["COMMANDS", "EXTRAS", "main", "version", "skip_interpreter_teardown"]

#: set by a command whose process must not run the interpreter's teardown (see `skip_interpreter_teardown`)
_SKIP_TEARDOWN: list[str] = []


def skip_interpreter_teardown(reason: str) -> None:
    """Ask the console entry (``main()`` called without argv) to end the process with `os._exit`
    after flushing stdout and stderr, instead of running the interpreter's teardown.

    For Ray: a driver interrupted while Ray's native threads were starting can crash (SIGSEGV) in
    the interpreter's teardown, after every result is stored and the instance stopped; nothing is
    left to do at that point but exit with the command's code. A caller of ``main(argv)`` (tests, a
    library) is never exited.
    """
    _SKIP_TEARDOWN.append(reason)


#: command name -> (module, one-line help). Modules live in experiments/cli/.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("experiments.cli.demo", "run the main job on a built-in example"),
    "synth": ("experiments.cli.synth", "write a seeded synthetic problem (.npz or .json)"),
    "info": (
        "experiments.cli.info",
        "summarize a problem file: sizes, padding, ties, tokens, feasibility hint",
    ),
    "certify": (
        "experiments.cli.certify_cmd",
        "certified l_p attention-SVM / decoder-SVM solution",
    ),
    "interpolate": (
        "experiments.cli.interpolate",
        "certified minimum-l_p-norm interpolation (regression data)",
    ),
    "signdescent": (
        "experiments.cli.signdescent",
        "diagonal-network paths (gd, smoothed sign, Adam) vs certified references",
    ),
    "verify": ("experiments.cli.verify", "independently re-check a certificate against the data"),
    "check": ("experiments.cli.check", "check a theorem's hypotheses (HOLDS / FAILS / UNDECIDED)"),
    "paths": ("experiments.cli.paths", "batched mirror-descent training paths and Bregman rates"),
    "regpath": ("experiments.cli.regpath", "regularization paths (Theorems 6 and 31)"),
    "plot": ("experiments.cli.plot", "figures for a run directory written by paths or regpath"),
    "sweep": ("experiments.cli.sweep", "a grid of jobs on local workers or Ray, resumable"),
    "study": (
        "experiments.cli.study",
        "offline studies: attention transformers (sentiment, vision), real data, p-GD nets",
    ),
    "pgd": (
        "experiments.cli.pgd",
        "p-GD paths on classification data against the certified l_p max-margin direction",
    ),
    "data": (
        "experiments.cli.data",
        "problems from real data (text, digits), offline, with provenance",
    ),
}


#: optional dependency (top-level import name) -> the pyproject extra that installs it. The base
#: install (certify, theorems, `mdcert synth/certify/verify/check/info`) needs none of them.
EXTRAS: dict[str, str] = {
    "torch": "train",
    "hypothesis": "train",
    "pebble": "train",
    "matplotlib": "plots",
    "ray": "ray",
    "yaml": "ray",
    "sklearn": "data",
    "tokenizers": "data",
    "safetensors": "data",
    "transformers": "data",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 1."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        message = " ".join(str(message).split())
        if "expected one argument" in message:
            message += " (a value starting with '-' must be attached: --opt=-1)"
        self.exit(1, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def version() -> str:
    """The installed package's version (importlib.metadata); from the source tree's pyproject.toml
    when mdcert runs uninstalled; ``unknown`` when neither says."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("mdcert")
    except PackageNotFoundError:
        pass
    try:
        import tomllib
        from pathlib import Path

        with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"]) + " (source tree, not installed)"
    except (OSError, KeyError, ValueError):
        return "unknown (not installed: pip install -e .)"


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    parser = _Parser(
        prog="mdcert",
        description=(
            "Certificates and experiments for the implicit bias of mirror descent: softmax "
            "attention (arXiv 2410.14581), p-GD classification (arXiv 2205.12808) and smoothed sign "
            "descent (arXiv 2410.14158)."
        ),
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"mdcert {version()}",
        help="print the version of mdcert and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules: dict[str, object] = {}
    for name, (module, help_) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(
            name, help=getattr(mod, "HELP", help_), description=getattr(mod, "HELP", help_)
        )
        mod.configure(p)
        modules[name] = mod
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mdcert`` console script; returns the exit code."""
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 1
    code = _run(modules[args.command], args)
    if argv is None and _SKIP_TEARDOWN:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


def _run(module, args: argparse.Namespace) -> int:
    from experiments.commands.outcome import exit_code_for, input_warnings, is_bug, one_line

    try:
        with input_warnings(args.command):
            return int(module.run(args) or 0)
    except (
        BrokenPipeError
    ) as exc:  # stdout closed early ("mdcert check ... | head"): stop quietly, as cat does
        if _stdout_closed():
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter's final flush must not raise
            return 141
        print(
            f"mdcert {args.command}: error: {one_line(exc)}", file=sys.stderr
        )  # another pipe broke
        return 1
    except KeyboardInterrupt as exc:
        return exit_code_for(args.command, exc)
    except Exception as exc:  # noqa: BLE001 - every outcome becomes one line and an exit code
        if os.environ.get("MDCERT_TRACEBACK") and is_bug(exc, extras=EXTRAS):
            raise
        return exit_code_for(
            args.command,
            exc,
            extras=EXTRAS,
            bug_hint=" (this is a bug; rerun with MDCERT_TRACEBACK=1 for the traceback and "
            "report it)",
        )


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll reports an error on it)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (
        AttributeError,
        OSError,
        ValueError,
    ):  # no poll, or a replaced stdout without a descriptor
        return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
