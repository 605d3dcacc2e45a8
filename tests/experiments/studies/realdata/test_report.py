"""The frontier's one-line summary (the numbers report.md states)."""

from __future__ import annotations

from experiments.studies.realdata.report import frontier_summary


def _f(ratio, opt, trained=(1, 0, 0)):
    def entry(c):
        total = sum(c)
        counts = dict(zip(("feasible", "infeasible", "undecided"), c))
        return {"counts": counts, "fractions": {k: v / total for k, v in counts.items()}}

    return {
        "nominal_ratio": ratio,
        "subsets": sum(opt),
        "opt": entry(opt),
        "trained": entry(trained),
    }


def test_frontier_summary_reads_the_first_crossing() -> None:
    fr = [
        _f(0.5, (2, 0, 0)),
        _f(1.0, (2, 0, 0)),
        _f(2.0, (1, 1, 0)),
        _f(4.0, (2, 0, 0)),
        _f(8.0, (0, 2, 0)),
        _f(16.0, (0, 1, 1)),
    ]
    s = frontier_summary(fr)
    # all feasible up to 1.0 (4.0 is feasible again, after a mixed size: not counted), all infeasible from 8.0
    assert s["opt"] == {
        "all_feasible_up_to": 1.0,
        "all_infeasible_from": 8.0,
        "undecided": 1,
        "subsets": 12,
    }
    assert (
        s["trained"]["all_feasible_up_to"] == 16.0 and s["trained"]["all_infeasible_from"] is None
    )


def test_frontier_summary_without_feasible_sizes() -> None:
    s = frontier_summary([_f(3.0, (0, 2, 0)), _f(6.0, (0, 0, 2))])
    assert s["opt"]["all_feasible_up_to"] is None and s["opt"]["all_infeasible_from"] == 3.0
    assert s["opt"]["undecided"] == 2
