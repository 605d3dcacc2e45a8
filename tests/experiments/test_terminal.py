"""Text that fits the terminal (experiments/terminal.py)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from experiments.terminal import MIN_WIDTH, columns, terminal_width, wrap, wrap_lines


@pytest.mark.parametrize("cols,expected", [("60", 60), ("200", 200), ("10", MIN_WIDTH)])
def test_width_follows_COLUMNS(monkeypatch, cols, expected) -> None:
    monkeypatch.setenv("COLUMNS", cols)
    assert terminal_width() == expected


words = st.lists(st.text(alphabet="abcdefghij_[](),.=<>0123456789", min_size=1, max_size=70), min_size=0, max_size=30)


@settings(max_examples=200, deadline=None)
@given(text=words.map(" ".join), width=st.integers(40, 200))
@example(text="D_psi(Wbar_mm, Wbar(0)): needs <= 0.5, is [1.27823, 1.27823]: fails (interval)", width=40)
@example(text="x" * 300, width=40)
def test_wrap_never_exceeds_the_width_and_keeps_every_character(text, width) -> None:
    lines = wrap(text, width, first="  -> ", indent="     ")
    assert all(len(ln) <= width for ln in lines)
    assert "".join(ln[5:] for ln in lines).replace(" ", "") == text.replace(" ", "")


@settings(max_examples=100, deadline=None)
@given(cells=st.lists(words.map(" ".join), min_size=3, max_size=3), w=st.integers(9, 40))
def test_columns_wrap_inside_their_column(cells, w) -> None:
    widths = (12, 9, w)
    lines = columns([cells], widths)
    assert all(len(ln) <= sum(widths) + 4 for ln in lines)
    assert sorted("".join(lines).replace(" ", "")) == sorted("".join(cells).replace(" ", ""))  # nothing cut


def test_wrap_lines_indents_continuations_under_their_own_line() -> None:
    out = wrap_lines(["  not holding: " + "word " * 20, "", "tail"], 40)
    assert out[0].startswith("  not holding:") and out[1].startswith("      word") and "" in out and out[-1] == "tail"
