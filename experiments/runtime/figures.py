"""Shared plumbing of the run-directory figures (``mdcert plot``): reading a run's ``summary.json``,
figures through matplotlib's object API (no pyplot state, no backend switch), and writing a PNG atomically."""

from __future__ import annotations

import json
from pathlib import Path

from certify.errors import MdcertError

__all__ = ["read_summary", "subplots", "save_png", "MAX_SUMMARY_BYTES"]

#: the largest summary.json read (a 100-trial paths run writes well under 1 MB)
MAX_SUMMARY_BYTES = 256 * 2**20


def read_summary(run_dir: str | Path, *, create: str = "mdcert paths -o DIR") -> dict:
    """The parsed ``summary.json`` of a run directory.

    Args:
        run_dir: the run directory.
        create: the command that writes such a directory (named in the error for a missing one).

    Raises:
        MdcertError: the directory or its summary is missing, unreadable or not a JSON object.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise MdcertError(f"run directory not found: {str(run_dir)!r}; create one with '{create}'")
    sfile = run_dir / "summary.json"
    if not sfile.is_file():
        raise MdcertError(
            f"{str(run_dir)!r} has no summary.json; is it a run directory written by mdcert?"
        )
    try:
        if sfile.stat().st_size > MAX_SUMMARY_BYTES:
            raise MdcertError(
                f"cannot read {str(sfile)!r}: larger than {MAX_SUMMARY_BYTES // 2**20} MB, which no "
                f"mdcert run writes; rerun the command that wrote it"
            )
        summary = json.loads(sfile.read_text())
    except (
        OSError,
        ValueError,
        RecursionError,
    ) as exc:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
        if isinstance(exc, MdcertError):
            raise
        if isinstance(exc, RecursionError):
            why = "nested too deeply"
        elif isinstance(exc, OSError):
            why = "unreadable"
        elif isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
            why = "not valid JSON"
        else:
            why = "a number too large"
        detail = str(exc).splitlines()[0][:100] if str(exc).strip() else type(exc).__name__
        raise MdcertError(
            f"cannot read {str(sfile)!r} ({why}: {detail}); rerun the command that wrote it"
        ) from None
    if not isinstance(summary, dict):
        raise MdcertError(f"cannot read {str(sfile)!r}: not a JSON object")
    return summary


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    *,
    figsize: tuple[float, float] | None = None,
    constrained_layout: bool = False,
    **kwargs,
):
    """``(fig, axes)`` as ``pyplot.subplots`` returns them, built with matplotlib's object API: a
    `matplotlib.figure.Figure` on its own Agg canvas, no pyplot state and no backend switch (a
    notebook's backend is left alone; nothing to close). ``kwargs`` go to `Figure.subplots`
    (squeeze, sharex, sharey, gridspec_kw, ...)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained" if constrained_layout else None)
    FigureCanvasAgg(fig)  # text extents (get_renderer) and PNG output without pyplot
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save_png(fig, path: Path, *, tight: bool = False) -> Path:
    """Write ``fig`` (a `matplotlib.figure.Figure`, e.g. from `subplots`) to ``path`` (dpi 110)
    atomically (`certify.io.atomic`). mdcert makes no pyplot figure, so there is nothing to close."""
    from certify.io.atomic import atomic_file

    with atomic_file(path) as fh:
        fig.savefig(fh, format="png", dpi=110, bbox_inches="tight" if tight else None)
    return Path(path)
