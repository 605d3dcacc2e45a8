"""Three-valued verdicts and the evidence behind them (docs/theory.md section 5).

A hypothesis check answers HOLDS, FAILS or UNDECIDED and carries `Evidence`: a named quantity,
an exact enclosure ``[lo, hi]`` of it (Fractions), the threshold it is compared with, and the
method that produced the enclosure. Only `Method.EXACT` and `Method.INTERVAL` evidence is rigorous.
The rule "float, solver or sampled evidence can refute but never prove" is enforced structurally:
`HypothesisReport` refuses to be constructed with verdict HOLDS unless every deciding piece of
evidence is rigorous and itself implies HOLDS (`EvidenceError` otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping

from certify.exact import format_g
from theorems.status import (
    EvidenceError,
    Method,
    Verdict,
    approx_float,
    fraction_text,
    fraction_or_none,
    kleene_and,
)

__all__ = [
    "EvidenceError",
    "Evidence",
    "HypothesisReport",
    "Method",
    "TheoremReport",
    "Verdict",
    "approx_float",
    "kleene_and",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RELATIONS = ("<=", "<", ">=", ">", "==")


@dataclass(frozen=True)
class Evidence:
    """One enclosed quantity and what the hypothesis requires of it.

    The hypothesis part this evidence decides is ``quantity RELATION threshold``, e.g.
    ``min_i a_i^T w > 0``. The true value of the quantity lies in ``[lo, hi]`` (``None`` = unbounded
    on that side). Evidence without a threshold is informational and decides nothing.

    Attributes:
        quantity: what is enclosed (human readable, e.g. "D_psi(Wbar_mm, Wbar(0))").
        lo: exact lower end of the enclosure, or None (-inf).
        hi: exact upper end of the enclosure, or None (+inf).
        method: how the enclosure was obtained.
        relation: one of "<=", "<", ">=", ">", "==" (None for informational evidence).
        threshold: the exact value compared with.
        detail: one line on how it was computed.
        data: JSON-able extras (e.g. a Gordan vector as "num/den" strings).
    """

    quantity: str
    lo: Fraction | None
    hi: Fraction | None
    method: Method
    relation: str | None = None
    threshold: Fraction | None = None
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lo", fraction_or_none("lo", self.lo))
        object.__setattr__(self, "hi", fraction_or_none("hi", self.hi))
        object.__setattr__(self, "threshold", fraction_or_none("threshold", self.threshold))
        object.__setattr__(self, "method", Method(self.method))
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            raise EvidenceError(f"empty enclosure for {self.quantity}: lo > hi")
        if (self.relation is None) != (self.threshold is None):
            raise EvidenceError("give both relation and threshold, or neither")
        if self.relation is not None and self.relation not in _RELATIONS:
            raise EvidenceError(f"unknown relation {self.relation!r}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def statement(
        cls,
        quantity: str,
        truth: bool,
        *,
        method: Method,
        detail: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> "Evidence":
        """A proved (or refuted) statement as an indicator quantity in {0, 1} required to be 1."""
        v = Fraction(1 if truth else 0)
        return cls(quantity, v, v, method, "==", Fraction(1), detail, dict(data or {}))

    @classmethod
    def point(
        cls,
        quantity: str,
        value: Fraction | int,
        *,
        method: Method = Method.EXACT,
        relation: str | None = None,
        threshold: Fraction | int | None = None,
        detail: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> "Evidence":
        """An exactly known quantity (lo = hi)."""
        v = Fraction(value)
        return cls(
            quantity,
            v,
            v,
            method,
            relation,
            None if threshold is None else Fraction(threshold),
            detail,
            dict(data or {}),
        )

    # ------------------------------------------------------------------ semantics
    @property
    def deciding(self) -> bool:
        return self.relation is not None

    def _interval_verdict(self) -> Verdict:
        lo, hi, t, rel = self.lo, self.hi, self.threshold, self.relation
        if rel == "==":
            if lo is not None and hi is not None and lo == hi == t:
                return Verdict.HOLDS
            if (lo is not None and lo > t) or (hi is not None and hi < t):
                return Verdict.FAILS
            return Verdict.UNDECIDED
        # holds_all: every value in [lo, hi] satisfies; fails_all: none does
        if rel == "<=":
            holds_all = hi is not None and hi <= t
            fails_all = lo is not None and lo > t
        elif rel == "<":
            holds_all = hi is not None and hi < t
            fails_all = lo is not None and lo >= t
        elif rel == ">=":
            holds_all = lo is not None and lo >= t
            fails_all = hi is not None and hi < t
        else:  # ">"
            holds_all = lo is not None and lo > t
            fails_all = hi is not None and hi <= t
        if holds_all:
            return Verdict.HOLDS
        if fails_all:
            return Verdict.FAILS
        return Verdict.UNDECIDED

    def implies(self) -> Verdict | None:
        """What this evidence proves about its requirement (None if informational).

        Non-rigorous evidence (solver, sampled) never implies HOLDS: at best it refutes.
        """
        if not self.deciding:
            return None
        v = self._interval_verdict()
        if v is Verdict.HOLDS and not self.method.rigorous:
            return Verdict.UNDECIDED
        return v

    def summary(self) -> str:
        """A short one-line rendering for tables that says what was required and whether it holds:
        ``D_psi(...): needs <= 0.5, is 1.27823: fails (interval)``; informational evidence reads
        ``quantity = value (method)``."""
        if (
            self.relation == "=="
            and self.threshold == 1
            and self.lo in (0, 1)
            and self.hi in (0, 1)
        ):
            word = {(1, 1): "proved", (0, 0): "refuted"}.get((self.lo, self.hi), "not decided")
            if word == "proved" and not self.method.rigorous:
                word = "consistent, not proved"
            return f"{self.quantity}: {word} ({self.method.value})"

        def f(x: Fraction | None, inf: str) -> str:
            if x is None:
                return inf
            if x.denominator == 1 and abs(x) <= 10**9:
                return str(x.numerator)
            return format_g(
                x, 6
            )  # exact rounding: no float overflow or underflow of huge/tiny bounds

        if self.lo == self.hi and self.lo is not None:
            enc = f(self.lo, "")
        else:
            enc = f"[{f(self.lo, '-inf')}, {f(self.hi, 'inf')}]"
        if not self.deciding:
            return f"{self.quantity} = {enc} ({self.method.value})"
        implied = self.implies()
        if implied is Verdict.UNDECIDED and self._interval_verdict() is Verdict.HOLDS:
            outcome = "consistent, not proved"  # float or sampled evidence never proves
        else:
            outcome = implied.value
        return f"{self.quantity}: needs {self.relation} {f(self.threshold, '')}, is {enc}: {outcome} ({self.method.value})"

    def to_json(self) -> dict:
        return {
            "quantity": self.quantity,
            "lo": fraction_text(self.lo),
            "hi": fraction_text(self.hi),
            "lo_approx": approx_float(self.lo),
            "hi_approx": approx_float(self.hi),
            "relation": self.relation,
            "threshold": fraction_text(self.threshold),
            "method": self.method.value,
            "rigorous": self.method.rigorous,
            "implies": None if self.implies() is None else self.implies().value,
            "detail": self.detail,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class HypothesisReport:
    """The checked status of one hypothesis.

    Invariants (enforced on construction, `EvidenceError` otherwise):
      * HOLDS needs at least one deciding evidence, and every deciding evidence must be rigorous
        and imply HOLDS;
      * FAILS needs at least one deciding evidence that implies FAILS;
      * UNDECIDED is not allowed when some rigorous evidence implies FAILS.

    Attributes:
        name: stable snake_case name (e.g. "tokens_locally_optimal").
        verdict: HOLDS / FAILS / UNDECIDED.
        evidence: the enclosures behind the verdict.
        message: one line saying what was found and what to change.
    """

    name: str
    verdict: Verdict
    evidence: tuple[Evidence, ...]
    message: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise EvidenceError(f"hypothesis name {self.name!r} is not snake_case")
        object.__setattr__(self, "verdict", Verdict(self.verdict))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        implied = [e.implies() for e in self.evidence if e.deciding]
        if self.verdict is Verdict.HOLDS:
            if not implied:
                raise EvidenceError(f"{self.name}: HOLDS without deciding evidence")
            bad = [
                e
                for e in self.evidence
                if e.deciding and (not e.method.rigorous or e.implies() is not Verdict.HOLDS)
            ]
            if bad:
                raise EvidenceError(f"{self.name}: HOLDS is not proved by {bad[0].summary()}")
        elif self.verdict is Verdict.FAILS:
            if Verdict.FAILS not in implied:
                raise EvidenceError(f"{self.name}: FAILS without evidence that implies FAILS")
        else:
            if any(
                e.deciding and e.method.rigorous and e.implies() is Verdict.FAILS
                for e in self.evidence
            ):
                raise EvidenceError(f"{self.name}: UNDECIDED although rigorous evidence refutes it")

    @classmethod
    def from_evidence(
        cls, name: str, evidence: Iterable[Evidence], *, holds: str, fails: str, undecided: str
    ) -> "HypothesisReport":
        """Verdict = Kleene AND of what the deciding evidence implies; message chosen accordingly."""
        ev = tuple(evidence)
        implied = [e.implies() for e in ev if e.deciding]
        verdict = kleene_and(implied) if implied else Verdict.UNDECIDED
        msg = {Verdict.HOLDS: holds, Verdict.FAILS: fails, Verdict.UNDECIDED: undecided}[verdict]
        return cls(name, verdict, ev, msg)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "verdict": self.verdict.value,
            "evidence": [e.to_json() for e in self.evidence],
            "message": self.message,
        }


@dataclass(frozen=True)
class TheoremReport:
    """All hypotheses of one theorem, their Kleene AND, and the quantities measured on the way.

    Attributes:
        theorem: the theorem's label, e.g. "10".
        title: its short title.
        reference: citation (arXiv:2410.14581 / JMLR 2026).
        hypotheses: one report per hypothesis.
        conclusion: what the theorem concludes (measured elsewhere, listed as "to measure").
        quantities: JSON-able measured quantities (data quantities of docs/theory.md section 5, inputs).
    """

    theorem: str
    title: str
    reference: str
    hypotheses: tuple[HypothesisReport, ...]
    conclusion: str
    quantities: Mapping[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        return kleene_and(h.verdict for h in self.hypotheses)

    def hypothesis(self, name: str) -> HypothesisReport:
        for h in self.hypotheses:
            if h.name == name:
                return h
        raise KeyError(name)

    def to_json(self) -> dict:
        return {
            "theorem": self.theorem,
            "title": self.title,
            "reference": self.reference,
            "verdict": self.verdict.value,
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "conclusion": {"statement": self.conclusion, "status": "to measure"},
            "quantities": dict(self.quantities),
        }
