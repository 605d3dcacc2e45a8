"""Text that fits the terminal (experiments/runtime/terminal.py)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from experiments.runtime.terminal import MIN_WIDTH, columns, terminal_width, wrap, wrap_lines


@pytest.mark.parametrize("cols,expected", [("60", 60), ("200", 200), ("10", MIN_WIDTH)])
def test_width_follows_COLUMNS(monkeypatch, cols, expected) -> None:
    monkeypatch.setenv("COLUMNS", cols)
    assert terminal_width() == expected


words = st.lists(
    st.text(alphabet="abcdefghij_[](),.=<>0123456789", min_size=1, max_size=70),
    min_size=0,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(text=words.map(" ".join), width=st.integers(40, 200))
@example(
    text="D_psi(Wbar_mm, Wbar(0)): needs <= 0.5, is [1.27823, 1.27823]: fails (interval)", width=40
)
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
    assert sorted("".join(lines).replace(" ", "")) == sorted(
        "".join(cells).replace(" ", "")
    )  # nothing cut


def test_wrap_lines_indents_continuations_under_their_own_line() -> None:
    out = wrap_lines(["  not holding: " + "word " * 20, "", "tail"], 40)
    assert (
        out[0].startswith("  not holding:")
        and out[1].startswith("      word")
        and "" in out
        and out[-1] == "tail"
    )


# ---------------------------------------------------------------- long vectors and nested dicts
from types import SimpleNamespace  # noqa: E402

from experiments.runtime.terminal import (
    HEAD_ITEMS,
    mapping_lines,
    problem_lines,
    shorten_lists,
    summarize_sequence,
)  # noqa: E402


@pytest.mark.parametrize(
    "values,expected",
    [
        ([], "[]"),
        ([0, 3, 1], "[0, 3, 1]"),
        (list(range(HEAD_ITEMS)), "[" + ", ".join(map(str, range(HEAD_ITEMS))) + "]"),
        (list(range(300)), "[0, 1, 2, 3, 4, 5, 6, 7, ...] (300 entries)"),
    ],
)
def test_summarize_sequence_keeps_short_lists_and_counts_long_ones(values, expected) -> None:
    assert summarize_sequence(values) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "alpha = [" + ", ".join(map(str, range(300))) + "]",
            "alpha = [0, 1, 2, 3, 4, 5, 6, 7, ...] (300 entries)",
        ),
        ("tokens (4, 5, 6) and [0.5, 1/3, 2e-3]", "tokens (4, 5, 6) and [0.5, 1/3, 2e-3]"),
        ("first refuted [3, 9] at 96 bits", "first refuted [3, 9] at 96 bits"),
        (
            "a=[1, 2, 3, 4, 5, 6, 7, 8, 9] b=[-1, 2.5, 3, 4, 5, 6, 7, 8, 9, 10]",
            "a=[1, 2, 3, 4, 5, 6, 7, 8, ...] (9 entries) b=[-1, 2.5, 3, 4, 5, 6, 7, 8, ...] (10 entries)",
        ),
        ("no list here", "no list here"),
    ],
)
def test_shorten_lists_table(text, expected) -> None:
    assert shorten_lists(text) == expected


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(-(10**6), 10**6), max_size=400), width=st.integers(40, 160))
@example(values=list(range(300)), width=80)
def test_a_long_alpha_fits_a_terminal_line(values, width) -> None:
    text = shorten_lists(f"alpha = {values}")
    assert text.count(",") <= HEAD_ITEMS
    if len(values) > HEAD_ITEMS:
        assert text.endswith(f"({len(values)} entries)")
    else:
        assert text == f"alpha = {values}"


def test_mapping_lines_flatten_nested_dicts_without_cutting() -> None:
    sha = "ab" * 40
    prov = {
        "source": {"name": "rotten_tomatoes", "sha256": sha, "files": ["a.parquet", "b.parquet"]},
        "ids": list(range(300)),
        "rows": [{"i": 1}],
        "seed": 0,
    }
    lines = mapping_lines(prov, 50)
    assert all(len(ln) <= 50 for ln in lines)
    text = "".join(ln.strip() for ln in lines)
    assert "source.name=rotten_tomatoes" in text and sha in text  # wrapped, never cut
    assert "ids=[0, 1, 2, 3, 4, 5, 6, 7, ...] (300 entries)" in "\n".join(lines)
    assert "rows=1 entry" in text and "seed=0" in text
    assert "source.files=[a.parquet, b.parquet]" in text


def test_problem_lines_show_lengths_and_provenance() -> None:
    pr = SimpleNamespace(
        n=300, T=16, d=32, lengths=[3] * 299 + [16], provenance={"dataset": {"name": "x" * 90}}
    )
    lines = problem_lines(pr, 60)
    assert " ".join(ln.strip() for ln in lines[:2]).startswith(
        "problem: n=300 T=16 d=32, lengths 3..16 (913 of 4800 tokens valid)"
    )
    assert lines[0].startswith("problem: n=300")
    assert "  provenance:" in lines and all(len(ln) <= 60 for ln in lines)
    assert "x" * 90 in "".join(ln.strip() for ln in lines)


def test_width_phrase_is_exact_and_says_exact_for_zero() -> None:
    from fractions import Fraction

    from experiments.runtime.terminal import width_phrase

    assert width_phrase(Fraction(0)) == "exact"
    assert width_phrase(Fraction(1, 10**40)) == "relative width 1.00e-40, 40 digits"
    # far below float64's range: still exact digits, no underflow to 0
    assert width_phrase(Fraction(3, 10**1000)).endswith(", 999 digits")
