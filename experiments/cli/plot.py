"""``mdcert plot RUN``: PNG figures for a run directory written by ``mdcert paths`` or ``mdcert regpath``.

Dispatches on ``summary.json``'s ``kind``: "paths" -> `experiments.paths.plots.plot_paths_run`,
"regpath" -> `experiments.regpath.plots.plot_regpath_run`.
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
    from experiments.runtime.figures import read_summary

    from experiments.runtime.outputs import check_distinct

    run_dir = Path(run_dir)
    sfile = run_dir / "summary.json"
    kind = read_summary(run_dir).get("kind")
    inputs = {
        f"the run's {name}": run_dir / name
        for name in ("summary.json", "arrays.npz", "path.npz")
        if (run_dir / name).exists()
    }
    for png in sorted(
        run_dir.glob("*.png")
    ):  # a figure that is an input (hard link, symlink) is refused
        check_distinct({f"the figure {png.name}": png}, inputs)
    if kind == "paths":
        from experiments.paths.plots import load_run, plot_paths_run

        _check_paths_plottable(run_dir, *load_run(run_dir))
        return _recorded(run_dir, plot_paths_run(run_dir))
    if kind == "regpath":
        try:
            from experiments.regpath.plots import plot_regpath_run
        except ImportError:
            raise MdcertError(
                "regpath figures are not available in this installation (experiments.regpath.plots)"
            ) from None
        return _recorded(run_dir, plot_regpath_run(run_dir))
    raise MdcertError(f"{str(sfile)!r} has kind {kind!r}; 'mdcert plot' knows {', '.join(KINDS)}")


def _recorded(run_dir: Path, files: list[Path]) -> list[Path]:
    """``files``, added to the run directory's marker (mdcert wrote them: ``--overwrite`` may
    replace them)."""
    from experiments.runtime.outputs import add_run_files

    add_run_files(run_dir, files)
    return files


def _check_paths_plottable(run_dir: Path, summary: dict, arrays: dict) -> None:
    """Refuse, with one line, a paths run whose (p, lr) groups have no finite recorded trajectory
    (every one stopped at a float limit): there is no curve to draw."""
    import numpy as np

    per_p = summary.get("per_p")
    if (
        not isinstance(per_p, list)
        or not per_p
        or not all(isinstance(e, dict) and "p_exact" in e and "lr" in e for e in per_p)
    ):
        raise MdcertError(
            f"{str(run_dir / 'summary.json')!r} lacks a valid 'per_p' list; it was not written by "
            f"'mdcert paths' or was edited - rerun 'mdcert paths'"
        )
    needed = ("record_steps", "status", "p_exact", "lr", "norm_p")
    if not all(k in arrays for k in needed):
        return  # plot_paths_run names what is missing
    try:
        status = np.asarray(arrays["status"]).astype(str)
        bad = []
        for e in summary["per_p"]:
            rows = np.flatnonzero(
                (arrays["p_exact"] == e["p_exact"]) & np.isclose(arrays["lr"], e["lr"])
            )
            finite = [
                b
                for b in rows
                if status[b] != "nonfinite"
                and np.any(np.isfinite(arrays["norm_p"][b][arrays["record_steps"][b] > 0]))
            ]
            if rows.size and not finite:
                bad.append(f"p={e.get('p_text', e.get('p'))} lr={e['lr']}")
    except (KeyError, TypeError, ValueError, IndexError):
        raise MdcertError(
            f"{str(run_dir)!r} has an inconsistent summary.json / arrays.npz; rerun 'mdcert paths'"
        ) from None
    if bad:
        raise MdcertError(
            f"nothing to plot for {', '.join(bad)} in {str(run_dir)!r}: every trajectory stopped at a "
            f"float limit (status 'nonfinite'); rerun 'mdcert paths' with a smaller --lr"
        )


def run(args: argparse.Namespace) -> int:
    try:
        files = plot_run(args.run)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        # the figures only read the run directory: a structural error means an edited or foreign file
        raise MdcertError(
            f"{str(args.run)!r} holds a summary.json / arrays file with unexpected structure "
            f"({type(exc).__name__}: {str(exc)[:80]}); rerun the command that wrote it"
        ) from None
    for f in files:
        print(f)
    return 0
