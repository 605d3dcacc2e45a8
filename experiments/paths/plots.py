"""Figures for a ``mdcert paths`` run directory (matplotlib, Agg backend; no torch).

`plot_paths_run(run_dir)` reads ``summary.json`` and ``arrays.npz`` and writes PNGs next to them:

- ``bregman.png``: mean +- std over trials of ``D_psi(Wbar_mm, Wbar(k))`` per p (alpha from the
  final attention, and the globally optimal alpha dashed);
- ``rate_fit.png``: the tail fits ``C (log k)^-a`` and ``C k^-b`` over the mean curve (goodness of fit);
- ``cross.png``: the cross grid (rows: path exponent p, columns: SVM exponent q), when present;
- ``projections.png``: 2-D projections of a few normalized paths onto the plane of the SVM
  direction and the initial direction;
- ``norm_growth.png``: ``||W(k)||_p`` mean +- std against log k with the fitted line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from experiments.figures import pyplot, read_summary, save_png

__all__ = ["load_run", "plot_paths_run"]


def load_run(run_dir: str | Path) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a run directory; MdcertError if it is missing or unreadable."""
    run_dir = Path(run_dir)
    summary = read_summary(run_dir)
    afile = run_dir / "arrays.npz"
    arrays = {}
    if afile.is_file():
        try:
            with open(afile, "rb") as fh:
                if fh.read(4) != b"PK\x03\x04":
                    raise ValueError("not a .npz archive")
            with np.load(afile, allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        except Exception as exc:  # OSError, ValueError, EOFError, zipfile.BadZipFile
            msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MdcertError(f"cannot read {str(afile)!r} ({msg}); rerun 'mdcert paths' to rewrite the run") from None
    return summary, arrays


def _groups(summary: dict, arrays: dict):
    """Yield (label, entry, row indices) per (p, lr) entry of the summary."""
    p_ex = arrays["p_exact"]
    lr = arrays["lr"]
    for e in summary["per_p"]:
        rows = np.flatnonzero((p_ex == e["p_exact"]) & np.isclose(lr, e["lr"]))
        label = f"p={e.get('p_text', e['p'])}" + (f", lr={e['lr']}" if len({x['lr'] for x in summary['per_p']}) > 1 else "")
        yield label, e, rows


def _mean_std(steps_row: np.ndarray, curves: np.ndarray):
    valid = steps_row > 0
    k = steps_row[valid]
    c = curves[:, valid]
    with np.errstate(invalid="ignore"):
        cnt = np.sum(np.isfinite(c), axis=0)
        m = np.where(cnt > 0, np.nanmean(np.where(np.isfinite(c), c, np.nan), axis=0) if c.size else np.nan, np.nan)
        s = np.where(cnt > 0, np.nanstd(np.where(np.isfinite(c), c, np.nan), axis=0) if c.size else np.nan, np.nan)
    return k, m, s


def _band(ax, k, m, s, label, **kw):
    line, = ax.plot(k, m, label=label, **kw)
    lo = np.maximum(m - s, np.nanmin(m[m > 0]) * 1e-2 if np.any(m > 0) else 1e-300)
    ax.fill_between(k, lo, m + s, color=line.get_color(), alpha=0.2)
    return line


def plot_paths_run(run_dir: str | Path) -> list[Path]:
    """Write the PNG figures of a paths run; returns their paths."""
    import warnings

    run_dir = Path(run_dir)
    summary, arrays = load_run(run_dir)
    if summary.get("kind") != "paths":
        raise MdcertError(f"{str(run_dir)!r} is a {summary.get('kind')!r} run, not a paths run")
    if "record_steps" not in arrays:
        raise MdcertError(f"{str(run_dir)!r} has no arrays.npz with recorded paths")
    plt = pyplot()
    out: list[Path] = []
    groups = list(_groups(summary, arrays))
    rs = arrays["record_steps"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if "bregman" in arrays:
            fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
            for ax, (label, e, rows) in zip(axes[0], groups):
                k, m, s = _mean_std(rs[rows[0]], arrays["bregman"][rows])
                _band(ax, k, m, s, "alpha = argmax final attention")
                k, m2, s2 = _mean_std(rs[rows[0]], arrays["bregman_opt"][rows])
                if np.any(np.isfinite(m2)):
                    _band(ax, k, m2, s2, "alpha = globally optimal", linestyle="--")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(label)
                ax.set_xlabel("step k")
                ax.set_ylabel(r"$D_\psi(\bar W_{mm}, \bar W(k))$")
                ax.legend(fontsize=7)
            fig.tight_layout()
            out.append(save_png(fig, run_dir / "bregman.png"))

            fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
            for ax, (label, e, rows) in zip(axes[0], groups):
                k, m, _ = _mean_std(rs[rows[0]], arrays["bregman"][rows])
                ax.plot(k, m, "k.", label="mean D(k)")
                fit = e.get("rate_fit") or {}
                if "log" in fit and fit.get("tail_from_step"):
                    kk = k[k >= fit["tail_from_step"]]
                    lf, pf = fit["log"], fit["power"]
                    ax.plot(kk, lf["C"] * np.log(kk) ** (-lf["exponent"]),
                            label=f"C (log k)^-{lf['exponent']:.2f}, rms {lf['rmse_log']:.3f}")
                    ax.plot(kk, pf["C"] * kk ** (-pf["exponent"]), "--",
                            label=f"C k^-{pf['exponent']:.2f}, rms {pf['rmse_log']:.3f}")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{label}: better fit {fit.get('better', 'n/a')}")
                ax.set_xlabel("step k")
                ax.legend(fontsize=7)
            fig.tight_layout()
            out.append(save_png(fig, run_dir / "rate_fit.png"))

        if "cross" in arrays:
            qs = arrays["cross_q"]
            fig, axes = plt.subplots(len(groups), len(qs), figsize=(3.2 * len(qs), 2.8 * len(groups)), squeeze=False)
            for i, (label, e, rows) in enumerate(groups):
                for j, q in enumerate(qs):
                    ax = axes[i, j]
                    k, m, s = _mean_std(rs[rows[0]], arrays["cross"][rows, j])
                    if np.any(np.isfinite(m)):
                        _band(ax, k, m, s, None)
                    ax.set_xscale("log")
                    ax.set_yscale("log")
                    ax.set_title(f"path {label}, SVM q={q:g}", fontsize=8)
            fig.tight_layout()
            out.append(save_png(fig, run_dir / "cross.png"))

        if "W_mm" in arrays:
            fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.8), squeeze=False)
            for ax, (label, e, rows) in zip(axes[0], groups):
                _projections(ax, arrays, rows, float(e["p"]))
                ax.set_title(label)
            fig.tight_layout()
            out.append(save_png(fig, run_dir / "projections.png"))

        fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
        for ax, (label, e, rows) in zip(axes[0], groups):
            k, m, s = _mean_std(rs[rows[0]], arrays["norm_p"][rows])
            ax.plot(k, m, label="mean")
            ax.fill_between(k, m - s, m + s, alpha=0.2)
            nf = e.get("norm_fit") or {}
            if "slope_log" in nf:
                kk = k[k >= nf["tail_from"]]
                ax.plot(kk, nf["intercept_log"] + nf["slope_log"] * np.log(kk), "--",
                        label=f"{nf['slope_log']:.2f} log k + c (R2 {nf['r2_log']:.3f})")
            ax.set_xscale("log")
            ax.set_xlabel("step k")
            ax.set_ylabel(r"$\|W(k)\|_p$")
            ax.set_title(label)
            ax.legend(fontsize=7)
        fig.tight_layout()
        out.append(save_png(fig, run_dir / "norm_growth.png"))
    return out


def _projections(ax, arrays: dict, rows: np.ndarray, p: float, max_paths: int = 8) -> None:
    """Coordinates of ``Wbar(k)`` in the orthonormal (Frobenius) basis {SVM direction, W(0) residual}."""
    rs = arrays["record_steps"]
    shown = 0
    for b in rows:
        ref = arrays["W_mm"][b]
        if not np.all(np.isfinite(ref)) or shown >= max_paths:
            continue
        valid = rs[b] >= 0
        W = arrays["W"][b][valid]
        W = W / np.sum(np.abs(W) ** p, axis=(1, 2), keepdims=True) ** (1 / p)
        e1 = ref / np.linalg.norm(ref)
        w0 = W[0] - np.sum(W[0] * e1) * e1
        nrm = np.linalg.norm(w0)
        if nrm == 0:
            continue
        e2 = w0 / nrm
        x, y = np.sum(W * e1, axis=(1, 2)), np.sum(W * e2, axis=(1, 2))
        ax.plot(x, y, "-", lw=1, alpha=0.8)
        ax.plot(x[-1], y[-1], "o", ms=3, color="k")
        ax.plot(np.sum(ref * e1), 0.0, "*", ms=10, color="r")
        shown += 1
    ax.set_xlabel("along SVM direction")
    ax.set_ylabel("along W(0) residual")
