"""Reports of the property-test kit: one result per (property, p regime, dtype, device), the shrunk
counterexample of every failing cell, and a table that shows each regime's failure (docs/theory.md
section 2 for the properties)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from experiments.testing.strategies import REGIME_LABELS

__all__ = ["Outcome", "CellResult", "KitReport"]


class Outcome(str, Enum):
    """The result of one property in one cell."""

    PASSED = "passed"
    FAILED = "FAILED"
    SKIPPED = "skipped"  #: not applicable (e.g. closure for a step function); the reason is given


@dataclass(frozen=True)
class CellResult:
    """One property in one (regime, dtype, device) cell.

    Attributes:
        prop: property name; regime: p regime name (see `experiments.testing.strategies`).
        dtype, device: where it ran; outcome: `Outcome`.
        message: the failure (with its shrunk counterexample) or the reason for a skip; "" when passed.
        examples: hypothesis examples run.
    """

    prop: str
    regime: str
    dtype: str
    device: str
    outcome: Outcome
    message: str = ""
    examples: int = 0


@dataclass(frozen=True)
class KitReport:
    """Everything one kit run found.

    Attributes:
        target: what was tested (`Adapter.how`); settings: one line of the options that mattered.
        results: tuple of `CellResult`.
    """

    target: str
    settings: str
    results: tuple

    @property
    def ok(self) -> bool:
        return not self.failures()

    def failures(self) -> list[CellResult]:
        return [r for r in self.results if r.outcome is Outcome.FAILED]

    def failed_properties(self) -> list[str]:
        """Failing property names, in order of first appearance."""
        return list(dict.fromkeys(r.prop for r in self.failures()))

    def by_regime(self, prop: str) -> dict:
        """``{regime: [CellResult, ...]}`` of one property."""
        out: dict = {}
        for r in self.results:
            if r.prop == prop:
                out.setdefault(r.regime, []).append(r)
        return out

    def format(self, *, failures_only: bool = False, width: int | None = None) -> str:
        """The report as text: a line per property and regime (dtypes and devices folded in); a failing
        cell shows its counterexample (cut to ``width`` characters when given)."""
        ran = [r for r in self.results if r.outcome is not Outcome.SKIPPED]
        lines = [
            f"property-test kit: {self.target}",
            f"  {self.settings}",
            f"  {len(ran) - len(self.failures())} of {len(ran)} checks pass"
            + (f"; FAILING: {', '.join(self.failed_properties())}" if not self.ok else ""),
        ]
        for prop in dict.fromkeys(r.prop for r in self.results):
            for regime, cells in self.by_regime(prop).items():
                bad = [c for c in cells if c.outcome is Outcome.FAILED]
                if failures_only and not bad:
                    continue
                skipped = [c for c in cells if c.outcome is Outcome.SKIPPED]
                label = REGIME_LABELS.get(regime, regime)
                if skipped and len(skipped) == len(cells):
                    lines.append(f"  {prop:<18} {label:<14} skipped: {skipped[0].message}")
                    continue
                where = ", ".join(
                    f"{c.dtype}/{c.device}" for c in cells if c.outcome is not Outcome.SKIPPED
                )
                if not bad:
                    lines.append(f"  {prop:<18} {label:<14} passed ({where})")
                    continue
                for c in bad:
                    msg = (
                        c.message
                        if width is None or len(c.message) <= width
                        else c.message[: width - 3] + "..."
                    )
                    lines.append(f"  {prop:<18} {label:<14} FAILED ({c.dtype}/{c.device}): {msg}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()
