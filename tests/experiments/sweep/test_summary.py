"""Sweep summaries (experiments/sweep/summary.py): the latest line per key, per swept setting, a figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from experiments.sweep.spec import load_spec  # noqa: E402
from experiments.sweep.store import Store  # noqa: E402
from experiments.sweep.summary import collect, format_summary, plot_verdicts, write_summary  # noqa: E402

from tests.experiments.sweep.helpers import make_problems, write_spec  # noqa: E402


def _spec(tmp_path):
    make_problems(tmp_path, seeds=(1, 2))
    return load_spec(
        write_spec(
            tmp_path,
            'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\n'
            'p = ["1.75", "2"]\nalpha = ["opt"]\n',
        )
    )


def _line(key, p, status="done", verdict="optimal", seconds=1.0, error=None, problem="data/p1.npz"):
    return {
        "key": key,
        "status": status,
        "verdict": verdict,
        "seconds": seconds,
        "error": error,
        "labels": {"problem": problem, "p": p, "alpha": "opt"},
    }


def test_latest_line_per_key_and_only_the_specs_keys(tmp_path) -> None:
    spec = _spec(tmp_path)
    store = Store(tmp_path / "out")
    store.root.mkdir()
    store.append_index(
        _line("k1", "1.75", status="failed", verdict=None, error="mdcert certify: error: boom")
    )
    store.append_index(_line("k1", "1.75", seconds=2.0))  # rerun: done now
    store.append_index(_line("k2", "1.75", verdict="infeasible", problem="data/p2.npz"))
    store.append_index(_line("k3", "2", status="failed", verdict=None, error="worker died"))
    store.append_index(_line("other", "2"))  # an older SPEC's job
    order, groups, failed = collect(store, spec, {"k1", "k2", "k3"})
    assert order == [("1.75",), ("2",)]
    assert groups[("1.75",)]["counts"] == {"optimal": 1, "infeasible": 1}
    assert groups[("2",)]["counts"] == {"failed": 1} and groups[("1.75",)]["seconds"] == [3.0, 2.0]
    assert [f["key"] for f in failed] == ["k3"]
    text = format_summary(spec, order, groups, failed)
    assert "| p | jobs | optimal | infeasible | no_verified_result | failed |" in text
    assert (
        "| 1.75 | 2 | 1 | 1 | 0 | 0 | 3.00 | 2.00 |" in text and "| 2 | 1 | 0 | 0 | 0 | 1 |" in text
    )
    assert "worker died" in text and "fixed alpha = opt" in text and "problem: 2 file(s)" in text


def test_figure_has_a_legend_and_labels(tmp_path, monkeypatch) -> None:
    spec = _spec(tmp_path)
    store = Store(tmp_path / "out")
    store.root.mkdir()
    store.append_index(_line("k1", "1.75"))
    store.append_index(_line("k2", "2", verdict="no_verified_result"))
    import matplotlib.figure

    seen = {}
    real = matplotlib.figure.Figure.savefig

    def spy(fig, *a, **k):
        ax = fig.axes[0]
        out = real(fig, *a, **k)  # drawn: ticks and layout final
        seen.update(
            legend=[t.get_text() for t in fig.legends[0].get_texts()],
            x=ax.get_xlabel(),
            y=ax.get_ylabel(),
            ticks=sorted(t.get_text() for t in ax.get_yticklabels()),
            counts=[v for v in ax.get_xticks() if 0 <= v <= ax.get_xlim()[1]],
            legend_in_axes=ax.get_legend() is not None,
        )
        return out

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    written = write_summary(store, spec, {"k1", "k2"})
    assert written["figure"].read_bytes()[:4] == b"\x89PNG"
    counts = seen.pop("counts")
    assert seen == {
        "legend": ["optimal", "no_verified_result"],
        "x": "jobs (count)",
        "y": "p",
        "ticks": ["p=1.75", "p=2"],
        "legend_in_axes": False,
    }
    assert counts and all(float(v).is_integer() for v in counts)  # integer ticks for counts
    assert not list(store.root.glob(".*tmp*"))
    order, groups, _ = collect(store, spec, set())
    assert plot_verdicts(spec, order, groups, store.root / "none.png") is None
