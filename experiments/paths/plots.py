"""Figures for a ``mdcert paths`` run directory (matplotlib, Agg backend; no torch).

`plot_paths_run(run_dir)` reads ``summary.json`` and ``arrays.npz`` and writes PNGs next to them:

- ``bregman.png``: mean +- std over trials of ``D_psi(Wbar_mm, Wbar(k))`` per p (alpha from the
  final attention, and the globally optimal alpha dashed);
- ``rate_fit.png``: the mean curve with its 95% bootstrap band, both laws fitted before the held-out
  split and their predictions of the held-out tail, the verdict and the margin that decided it;
- ``cross.png``: the cross grid (rows: path exponent p, columns: SVM exponent q), when present;
- ``projections.png``: 2-D projections of a few normalized paths onto the plane of the SVM
  direction and the initial direction;
- ``norm_growth.png``: median ``||W(k)||_p`` with the 10-90% band over trajectories and the fitted law of
  the step rule (normalized: ``C k^e`` beside ``1/(p-1)`` and the dual-step bound; constant: ``log k``).
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

            fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 4.2), squeeze=False)
            for ax, (label, e, rows) in zip(axes[0], groups):
                _rate_panel(ax, rs[rows[0]], arrays["bregman"][rows], e.get("rate_fit") or {}, label)
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

        fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 4.2), squeeze=False)
        for ax, (label, e, rows) in zip(axes[0], groups):
            _norm_panel(ax, rs[rows[0]], arrays["norm_p"][rows], e, label, bool(summary["config"].get("normalize")))
        fig.tight_layout()
        out.append(save_png(fig, run_dir / "norm_growth.png"))
    return out


def _rate_panel(ax, steps_row: np.ndarray, curves: np.ndarray, fit: dict, label: str) -> None:
    """The mean D(k) with its bootstrap band, both laws fitted before the held-out split and their
    predictions of the held-out tail, and the verdict with the margin that decided it."""
    from experiments.paths.rates import bootstrap_means

    valid = steps_row > 0
    k, c = steps_row[valid].astype(float), curves[:, valid]
    rows = np.all(np.isfinite(c) & (c > 0), axis=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel(r"$D_\psi(\bar W_{mm}, \bar W(k))$")
    if not rows.any():
        ax.set_title(f"{label}: no finite curve", fontsize=9)
        return
    c = c[rows]
    geo = fit.get("average", "arithmetic") == "geometric"
    name = "geometric mean" if geo else "mean"
    ax.plot(k, np.exp(np.log(c).mean(axis=0)) if geo else c.mean(axis=0), "k.", ms=3,
            label=f"{name} over {c.shape[0]} trajectories")
    if c.shape[0] > 1:
        boot = bootstrap_means(np.log(c) if geo else c, 400, np.random.default_rng(0))
        lo, hi = np.percentile(np.exp(boot) if geo else boot, [2.5, 97.5], axis=0)
        ax.fill_between(k, lo, hi, color="0.6", alpha=0.35, lw=0, label=f"95% bootstrap band of the {name}")
    sel = fit.get("selection")
    if sel and "tail_from_step" in fit:
        split = sel["split_step"]
        kk = k[k >= fit["tail_from_step"]]
        for m, style, name in (("log", "C0", "C (log k)^-a"), ("power", "C3", "C k^-b")):
            a, C = sel["early_fits"][m]
            x = np.log(kk) if m == "log" else kk
            y = C * x ** (-a)
            err = sel[f"error_{m}"]
            ax.plot(kk[kk < split], y[kk < split], "-", color=style, label=f"{name}, a={a:.3g} fitted before the split"
                    if m == "log" else f"{name}, b={a:.3g} fitted before the split")
            ax.plot(kk[kk >= split], y[kk >= split], "--", color=style, label=f"its prediction (rms log error {err:.2g})")
        ax.axvline(split, color="0.3", ls=":", lw=1, label=f"held-out tail from k={split}")
    verdict = fit.get("verdict", "n/a")
    margin = ""
    if sel and sel.get("difference_ci"):
        lo_d, hi_d = sel["difference_ci"]
        margin = f"\nerror log - power {sel['difference']:.2g} [{lo_d:.2g}, {hi_d:.2g}]"
    state = fit.get("state")
    ax.set_title(f"{label}: {verdict}" + (f" ({state})" if state and state != "asymptotic" else "") + margin,
                 fontsize=9)
    ax.legend(fontsize=6)


def _norm_panel(ax, steps_row: np.ndarray, norms: np.ndarray, entry: dict, label: str, normalized: bool) -> None:
    """Median ||W(k)||_p with its 10-90% band over trajectories and the fitted law of the step rule
    (power of k for normalized steps, log k for constant steps; docs/theory.md section 6)."""
    from experiments.paths.growth import normalized_bound

    valid = steps_row > 0
    k, c = steps_row[valid].astype(float), norms[:, valid]
    c = c[np.all(np.isfinite(c), axis=1)]
    ax.set_xscale("log")
    if normalized:
        ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel(r"$\|W(k)\|_p$")
    ax.set_title(label, fontsize=9)
    if c.shape[0] == 0:
        return
    med = np.median(c, axis=0)
    line, = ax.plot(k, med, label=f"median over {c.shape[0]} trajectories")
    ax.plot(k, c.mean(axis=0), "k.", ms=2, label="mean (the fitted curve)")
    ax.fill_between(k, np.percentile(c, 10, axis=0), np.percentile(c, 90, axis=0), color=line.get_color(),
                    alpha=0.2, lw=0, label="10-90% of trajectories")
    nf = entry.get("norm_fit") or {}
    if "law" in nf:
        kk = k[k >= nf["tail_from"]]
        ci = nf.get("ci") or [np.nan, np.nan]
        if nf["law"] == "power":
            fit_label = f"fit of the mean: C k^e, e = {nf['coefficient']:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]"
            if nf.get("expected") is not None:
                fit_label += f"\n(1/(p-1) = {nf['expected']:.3g})"
            ax.plot(kk, np.exp(nf["intercept"]) * kk ** nf["coefficient"], "k--", lw=1, label=fit_label)
        else:
            ax.plot(kk, nf["intercept"] + nf["coefficient"] * np.log(kk), "k--", lw=1,
                    label=f"fit of the mean: c1 log k + c0, c1 = {nf['coefficient']:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]"
                          f"\n(Theorem 8, R^2 {nf['r2']:.3f})")
    if normalized and steps_row[0] == 0 and np.isfinite(norms[:, 0]).all():
        bound = normalized_bound(np.median(norms[:, 0]), k, p=float(entry["p"]), lr=float(entry["lr"]))
        ax.plot(k, bound, ":", color="0.4", lw=1, label="dual-step bound (||W0||^(p-1) + lr k)^(1/(p-1))")
    ax.legend(fontsize=6)


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
