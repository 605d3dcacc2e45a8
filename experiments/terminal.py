"""Plain-text output that fits the terminal: its width (``COLUMNS``, else the terminal, else a default)
and word wrapping with hanging indents, so that a long evidence line is wrapped, never cut with
``...``. Used by the command-line tables (``mdcert check``)."""

from __future__ import annotations

import shutil
import textwrap
from typing import Sequence

__all__ = ["terminal_width", "wrap", "wrap_lines", "columns"]

#: the width used when neither COLUMNS nor a terminal says otherwise (output to a file or a pipe)
DEFAULT_WIDTH = 100
#: narrower widths are treated as this one (a table of words needs some room)
MIN_WIDTH = 40


def terminal_width(*, default: int = DEFAULT_WIDTH) -> int:
    """Columns available on stdout: ``COLUMNS`` when set, else the terminal's width, else ``default``;
    never below `MIN_WIDTH`."""
    return max(MIN_WIDTH, shutil.get_terminal_size((default, 24)).columns)


def wrap(text: str, width: int, *, indent: str = "", first: str | None = None) -> list[str]:
    """``text`` wrapped to ``width`` columns: the first line starts with ``first`` (default ``indent``),
    the others with ``indent``; words longer than a line are broken, so no line is wider than ``width``."""
    first = indent if first is None else first
    body = " ".join(str(text).split())
    if not body:
        return [first.rstrip()]
    return textwrap.wrap(body, width=max(width, len(first) + 8, len(indent) + 8), initial_indent=first,
                         subsequent_indent=indent, break_long_words=True, break_on_hyphens=False)


def wrap_lines(lines: Sequence[str], width: int, *, indent: str = "    ") -> list[str]:
    """Every line of ``lines`` wrapped to ``width`` (continuations indented by its own leading blanks
    plus ``indent``); empty lines stay empty."""
    out: list[str] = []
    for line in lines:
        if not line.strip():
            out.append("")
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out.extend(wrap(line, width, first=lead, indent=lead + indent))
    return out


def columns(rows: Sequence[Sequence[str]], widths: Sequence[int], *, gap: int = 2) -> list[str]:
    """A table whose cells are word-wrapped inside their column (a row takes as many lines as its
    tallest cell); ``widths`` are the columns' widths, the last one may be wrapped to its width too."""
    out: list[str] = []
    sep = " " * gap
    for row in rows:
        cells = [wrap(c, w) or [""] for c, w in zip(row, widths)]
        for i in range(max(len(c) for c in cells)):
            parts = [(c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths)]
            out.append(sep.join(parts).rstrip())
    return out
