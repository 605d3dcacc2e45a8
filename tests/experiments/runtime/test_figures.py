"""experiments.runtime.figures: figures through matplotlib's object API, no global backend switch (issue 22)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("matplotlib")


def test_subplots_draws_and_saves_without_pyplot_or_a_backend_switch(tmp_path) -> None:
    """A notebook user's backend is theirs: making and saving a figure neither imports pyplot nor
    calls matplotlib.use (checked in a fresh interpreter whose backend is set to a non-Agg one)."""
    code = textwrap.dedent(f"""
        import sys, matplotlib
        matplotlib.use("svg")
        from experiments.runtime.figures import save_png, subplots
        fig, axes = subplots(1, 2, figsize=(4, 2), squeeze=False, constrained_layout=True)
        axes[0][0].plot([1, 2], [3, 4]); axes[0][0].set_xlabel("step")
        r = fig.canvas.get_renderer()                       # text extents for layout checks
        assert axes[0][0].xaxis.label.get_window_extent(r).width > 0
        save_png(fig, {str(tmp_path / "f.png")!r})
        print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["svg", "False"]
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
