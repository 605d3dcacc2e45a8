"""``mdcert plot RUN``: PNG figures for a run directory written by ``mdcert paths`` or ``mdcert regpath``.

Dispatches on ``summary.json``'s ``kind``: "paths" -> `experiments.plots.plot_paths_run`,
"regpath" -> `experiments.regpath_plots.plot_regpath_run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from certify.errors import MdcertError

HELP = "PNG figures for a run directory written by 'mdcert paths' or 'mdcert regpath'"

__all__ = ["HELP", "configure", "run", "plot_run"]

KINDS = ("paths", "regpath")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run directory (holds summary.json)")


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write the figures of ``run_dir``; returns the PNG paths."""
    from experiments.figures import read_summary

    run_dir = Path(run_dir)
    sfile = run_dir / "summary.json"
    kind = read_summary(run_dir).get("kind")
    if kind == "paths":
        from experiments.plots import plot_paths_run

        return plot_paths_run(run_dir)
    if kind == "regpath":
        try:
            from experiments.regpath_plots import plot_regpath_run
        except ImportError:
            raise MdcertError("regpath figures are not available in this installation (experiments.regpath_plots)") from None
        return plot_regpath_run(run_dir)
    raise MdcertError(f"{str(sfile)!r} has kind {kind!r}; 'mdcert plot' knows {', '.join(KINDS)}")


def run(args: argparse.Namespace) -> int:
    files = plot_run(args.run)
    for f in files:
        print(f)
    return 0
