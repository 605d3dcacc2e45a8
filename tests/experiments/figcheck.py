"""A layout check for the figures mdcert writes: text inside the canvas, no two texts overlapping,
legends outside every axes, every axis labelled (the figure tests of the studies use it)."""

from __future__ import annotations

__all__ = ["layout_problems", "capture_figures"]


def _texts(fig):
    """(name, bbox) of every visible text of ``fig``: titles, axis labels, tick labels, legends."""
    r = fig.canvas.get_renderer()
    out = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        out.append(("suptitle", fig._suptitle.get_window_extent(r)))
    for i, ax in enumerate(fig.axes):
        for what, t in (
            ("title", ax.title),
            ("xlabel", ax.xaxis.label),
            ("ylabel", ax.yaxis.label),
        ):
            if t.get_text() and t.get_visible():
                out.append((f"axes {i} {what}", t.get_window_extent(r)))
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():  # drawn ticks only: inside the view
                t = tick.label1
                if (
                    t.get_text()
                    and t.get_visible()
                    and tick.get_visible()
                    and lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo)
                ):
                    out.append((f"axes {i} tick {t.get_text()!r}", t.get_window_extent(r)))
    for j, leg in enumerate(fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]):
        out.append((f"legend {j}", leg.get_window_extent(r)))
    return out


def layout_problems(fig) -> list[str]:
    """What a reviewer would send back, as sentences (empty when the layout is clean)."""
    if not hasattr(fig.canvas, "get_renderer"):  # a bare `Figure()`: draw it as savefig will
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    canvas = fig.bbox
    problems = []
    texts = _texts(fig)
    for name, bb in texts:
        if (
            bb.x0 < canvas.x0 - 1
            or bb.y0 < canvas.y0 - 1
            or bb.x1 > canvas.x1 + 1
            or bb.y1 > canvas.y1 + 1
        ):
            problems.append(f"{name} is clipped by the figure edge")
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            (na, ba), (nb, bb) = texts[a], texts[b]
            if (
                ba.width
                and bb.width
                and ba.overlaps(bb)
                and not (na.startswith("legend") and nb.startswith("legend"))
            ):
                w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
                h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
                if w > 1 and h > 1:
                    problems.append(f"{na} overlaps {nb}")
    for i, ax in enumerate(fig.axes):
        ylabel = any(
            x.get_ylabel() for x in ax.get_shared_y_axes().get_siblings(ax)
        )  # sharey: one label
        if not ax.get_xlabel() or not ylabel:
            problems.append(f"axes {i} ({ax.get_title()!r}) has an unlabelled axis")
        box = ax.get_window_extent(r)
        for j, leg in enumerate(fig.legends + [x.get_legend() for x in fig.axes if x.get_legend()]):
            lb = leg.get_window_extent(r)
            if (
                lb.overlaps(box)
                and min(lb.x1, box.x1) - max(lb.x0, box.x0) > 1
                and min(lb.y1, box.y1) - max(lb.y0, box.y0) > 1
            ):
                problems.append(f"legend {j} lies over axes {i} ({ax.get_title()!r})")
    return problems


def capture_figures(monkeypatch) -> dict:
    """Make `experiments.runtime.figures.save_png` record every figure it writes: file name -> problems."""
    import experiments.runtime.figures as figures

    seen: dict = {}
    real = figures.save_png

    def spy(fig, path, **kw):
        seen[path.name] = layout_problems(fig)
        return real(fig, path, **kw)

    monkeypatch.setattr(figures, "save_png", spy)
    return seen
