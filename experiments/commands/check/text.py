"""The terminal text of ``mdcert check``: the table of hypotheses (`format_table`), wrapped to the
terminal's width and never cut, and the summary lines under it (`summary_lines`)."""

from __future__ import annotations

from typing import Sequence

__all__ = ["format_table", "table_lines", "summary_lines"]


def format_table(report, *, width: int | None = None) -> str:
    """Plain-text table of hypothesis, verdict, key evidence (what was required, what was found, and
    whether it holds) and what to change, wrapped to ``width`` columns (default: the terminal's,
    `experiments.runtime.terminal.terminal_width`); nothing is cut. Wide terminals get four columns, medium
    ones three (evidence and message in one), narrow ones one block per hypothesis."""
    return "\n".join(table_lines(report, width=width))


def table_lines(report, *, width: int | None = None) -> list[str]:
    """The lines of `format_table`."""
    from experiments.runtime.terminal import (
        columns,
        shorten_lists,
        terminal_width,
        wrap,
        wrap_lines,
    )

    width = terminal_width() if width is None else max(int(width), 40)
    entries = []
    for h in report.hypotheses:
        deciding = [e for e in h.evidence if e.deciding]
        telling = [e for e in deciding if e.implies() is h.verdict] or deciding or list(h.evidence)
        entries.append(
            (
                h.name,
                h.verdict.value.upper(),
                shorten_lists(telling[0].summary()) if telling else "-",
                shorten_lists(h.message),
            )
        )
    wn = max([len("hypothesis")] + [len(e[0]) for e in entries])
    rest = width - wn - 9 - 4
    if rest >= 64:
        we = rest * 11 // 20
        widths = (wn, 9, we, rest - we - 2)
        lines = columns(
            [("hypothesis", "verdict", "key evidence", "message / what to change")], widths
        )
        lines.append("  ".join("-" * w for w in widths))
        for name, verdict, key, msg in entries:
            lines += columns([(name, verdict, key, msg)], widths)
    elif rest >= 30:
        widths = (wn, 9, rest)
        lines = columns([("hypothesis", "verdict", "key evidence; what to change")], widths)
        lines.append("  ".join("-" * w for w in widths))
        pad = " " * (wn + 9 + 4)
        for name, verdict, key, msg in entries:
            lines += columns([(name, verdict, key)], widths)
            lines += wrap(msg, width, first=pad + "-> ", indent=pad + "   ")
    else:
        lines = []
        for i, (name, verdict, key, msg) in enumerate(entries):
            lines += ([""] if i else []) + wrap(
                f"{name}  {verdict}", width, first="", indent="    "
            )
            lines += wrap(key, width, first="  evidence: ", indent="    ")
            lines += wrap(msg, width, first="  -> ", indent="    ")
    head = wrap_lines(
        [f"Theorem {report.theorem}: {report.title}", f"  {shorten_lists(report.reference)}"], width
    )
    foot = [f"verdict: {report.verdict.value.upper()} (Kleene AND of the hypotheses)"]
    notes = [
        f"  {h.name}: {shorten_lists(h.message)}"
        for h in report.hypotheses
        if h.verdict.value != "holds"
    ]
    if notes:
        foot += ["not holding:"] + notes
    foot.append(f"conclusion (to measure): {shorten_lists(report.conclusion)}")
    return head + [""] + lines + [""] + wrap_lines(foot, width)


def summary_lines(
    report, *, from_training: bool, steps: int, notes: Sequence[str], seconds: float
) -> list[str]:
    """The lines under the table, unwrapped: alpha (and where it came from), the certified
    ``||W_mm||_p`` bracket and support rows, the path ``notes`` and the time taken."""
    from fractions import Fraction

    from certify.exact import format_g
    from experiments.runtime.terminal import shorten_lists

    q = report.quantities
    tail = [
        f"alpha = {shorten_lists(str(q['alpha']))}"
        + (f" (argmax of the final attention after {steps} steps)" if from_training else "")
    ]
    svm = q.get("attention_svm")
    if svm and svm.get("opt_lower"):
        lo, hi = Fraction(svm["opt_lower"]), Fraction(svm["opt_upper"])
        counts = svm.get("support_counts") or {}
        tail.append(
            f"||W_mm||_p in [{format_g(lo, 12)}, {format_g(hi, 12)}], support rows: "
            + ", ".join(f"{v} {k}" for k, v in counts.items())
        )
    tail += list(notes)
    tail.append(f"time: {seconds:.2f} s")
    return tail
