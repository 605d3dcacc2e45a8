"""The records of a domain check (`theorems.domain`; docs/theory.md section 5.1): the kind of a
domain condition, the condition with its verdict, an exact point value and the whole report."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


def short_text(x, n: int = 50) -> str:
    """``x`` on one line, cut to ``n`` characters."""
    text = " ".join(str(x).split())
    return text if len(text) <= n else text[: n - 3] + "..."


__all__ = ["short_text", "Condition", "DomainReport", "Kind", "PointValue"]


class Kind(Enum):
    """What a condition asks of its expression g on its region."""

    POSITIVE = "> 0"
    NONNEGATIVE = ">= 0"
    NONZERO = "!= 0"
    COVERED = "covered by a piece"


@dataclass(frozen=True)
class Condition:
    """``g kind`` must hold at every u of ``region`` (a sympy set); ``node`` is the written node asking it."""

    kind: Kind
    g: object
    node: object
    region: object

    def text(self) -> str:
        if self.kind is Kind.COVERED:
            return f"the conditions of {short_text(self.node)} cover R"
        return f"{short_text(self.g)} {self.kind.value} (for {short_text(self.node)})"


@dataclass(frozen=True)
class PointValue:
    """The written expression at an exact point: ``status`` is "defined", "undefined", "not real" or
    "unknown"; ``value`` the exact value (None when undefined), ``why`` the node that fails."""

    point: object
    status: str
    value: object = None
    why: str = ""


@dataclass(frozen=True)
class DomainReport:
    """``status`` "holds" (every condition proved on R), "fails" (``point`` refutes) or "undecided"."""

    status: str
    detail: str
    point: object = None
    count: int = 0
