"""Plain-text output that fits the terminal: its width (``COLUMNS``, else the terminal, else a default)
and word wrapping with hanging indents, so that a long evidence line is wrapped, never cut with
``...``; long vectors summarized as their first items and a count (the full list goes to the JSON
outputs), nested dicts as short ``key=value`` lines. Used by ``mdcert check``, ``certify``, ``verify``,
``paths`` and ``regpath``."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from typing import Any, Mapping, Sequence

__all__ = [
    "width_phrase",
    "terminal_width",
    "wrap",
    "wrap_lines",
    "columns",
    "summarize_sequence",
    "shorten_lists",
    "mapping_lines",
    "problem_lines",
    "HEAD_ITEMS",
]

#: how many leading items a summarized vector shows
HEAD_ITEMS = 8

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
    return textwrap.wrap(
        body,
        width=max(width, len(first) + 8, len(indent) + 8),
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    )


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


def summarize_sequence(values: Sequence[Any], *, head: int = HEAD_ITEMS) -> str:
    """``[a, b, c]`` for a short sequence; ``[a, b, ..., h, ...] (300 entries)`` for one longer than
    ``head`` items: the first ``head`` items and the count (the full list belongs in a JSON file)."""
    items = [str(v) for v in values]
    if len(items) <= head:
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join(items[:head]) + f", ...] ({len(items)} entries)"


# a bracketed list of at least two comma-separated numbers (ints, decimals, fractions, exponents)
_NUM = r"-?\d+(?:[./]\d+)?(?:e[-+]?\d+)?"
_LIST = re.compile(r"[\[(]\s*(" + _NUM + r"(?:\s*,\s*" + _NUM + r")+)\s*,?\s*[\])]")


def shorten_lists(text: str, *, head: int = HEAD_ITEMS) -> str:
    """``text`` with every bracketed list of numbers longer than ``head`` items replaced by
    `summarize_sequence` (first items and a count); shorter lists and other text unchanged."""

    def one(m: re.Match) -> str:
        items = [x.strip() for x in m.group(1).split(",")]
        return m.group(0) if len(items) <= head else summarize_sequence(items, head=head)

    return _LIST.sub(one, str(text))


def _value_text(value: Any, head: int) -> str:
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return summarize_sequence(value, head=head)
        return f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def mapping_lines(
    mapping: Mapping[str, Any],
    width: int,
    *,
    indent: str = "  ",
    head: int = HEAD_ITEMS,
    prefix: str = "",
) -> list[str]:
    """A nested dict as ``key=value`` lines (nested keys joined with dots), each wrapped to ``width``
    (never cut); lists of scalars summarized by `summarize_sequence`, lists of dicts by their count."""
    out: list[str] = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out += mapping_lines(value, width, indent=indent, head=head, prefix=name + ".")
        else:
            out += wrap(
                f"{name}={_value_text(value, head)}", width, first=indent, indent=indent + "    "
            )
    return out


def problem_lines(problem: Any, width: int) -> list[str]:
    """What a command says about the problem it read: shape, lengths (when given) and its provenance
    as `mapping_lines` (the problem file keeps the full record)."""
    head = f"problem: n={problem.n} T={problem.T} d={problem.d}"
    if problem.lengths is not None:
        L = problem.lengths
        head += (
            f", lengths {int(min(L))}..{int(max(L))} ({int(sum(L))} of {problem.n * problem.T} tokens "
            f"valid)"
        )
    out = wrap(head, width, first="", indent="    ")
    if getattr(problem, "provenance", None):
        out += ["  provenance:"] + mapping_lines(problem.provenance, width, indent="    ")
    return out


def width_phrase(relative_width) -> str:
    """``relative width 1.23e-40, 39 digits`` (or ``exact`` for 0) for an enclosure's certified
    relative width, a Fraction >= 0: computed exactly (``certify.exact.decimal_digits``), no float."""
    from certify.exact import decimal_digits, format_sci

    if relative_width == 0:
        return "exact"
    return f"relative width {format_sci(relative_width)}, {decimal_digits(relative_width)} digits"
