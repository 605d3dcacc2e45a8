"""Tests of theorems.verdict: Kleene logic, evidence semantics, and the structural HOLDS guard."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from theorems.verdict import (
    Evidence,
    EvidenceError,
    HypothesisReport,
    Method,
    TheoremReport,
    Verdict,
    kleene_and,
)

H, F, U = Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED


@pytest.mark.parametrize(
    "a,b,want",
    [
        (H, H, H),
        (H, U, U),
        (U, H, U),
        (H, F, F),
        (F, H, F),
        (U, F, F),
        (F, U, F),
        (U, U, U),
        (F, F, F),
    ],
)
def test_kleene_and_table(a, b, want):
    assert (a & b) is want
    assert kleene_and([a, b]) is want


def test_kleene_or_is_dual_and_empty_and_holds():
    for a, b in itertools.product(Verdict, repeat=2):
        neg = {H: F, F: H, U: U}
        assert neg[a | b] is (neg[a] & neg[b])
    assert kleene_and([]) is H


@pytest.mark.parametrize(
    "rel,lo,hi,t,want",
    [
        ("<=", 0, 1, 1, H),
        ("<=", 0, 2, 1, U),
        ("<=", 2, 3, 1, F),
        ("<", 0, 1, 1, U),
        ("<", 1, 2, 1, F),
        (">=", 1, 2, 1, H),
        (">", 1, 2, 1, U),
        (">", 2, 3, 1, H),
        (">", 0, 1, 1, F),
        (">=", 0, 1, 2, F),
        ("==", 1, 1, 1, H),
        ("==", 0, 1, 1, U),
        ("==", 2, 2, 1, F),
    ],
)
def test_interval_semantics(rel, lo, hi, t, want):
    e = Evidence("q", Fraction(lo), Fraction(hi), Method.INTERVAL, rel, Fraction(t))
    assert e.implies() is want


def test_unbounded_sides():
    assert Evidence("q", None, Fraction(1), Method.EXACT, "<=", Fraction(2)).implies() is H
    assert Evidence("q", None, Fraction(1), Method.EXACT, ">=", Fraction(0)).implies() is U
    assert Evidence("q", Fraction(3), None, Method.EXACT, "<=", Fraction(2)).implies() is F


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lo=0.5, hi=Fraction(1)), "exact Fraction"),
        (dict(lo=Fraction(2), hi=Fraction(1)), "empty enclosure"),
        (dict(lo=Fraction(0), hi=Fraction(1), relation="<="), "both relation and threshold"),
        (
            dict(lo=Fraction(0), hi=Fraction(1), relation="~", threshold=Fraction(1)),
            "unknown relation",
        ),
        (dict(lo=True, hi=Fraction(1)), "not bool"),
    ],
)
def test_bad_evidence(kwargs, match):
    with pytest.raises((EvidenceError, TypeError), match=match):
        Evidence("q", method=Method.EXACT, **kwargs)


def test_report_invariants():
    good = Evidence.point("x", 1, relation=">", threshold=0)
    bad = Evidence.point("x", -1, relation=">", threshold=0)
    sampled = Evidence.point("x", 1, method=Method.SAMPLED, relation=">", threshold=0)
    assert HypothesisReport("h", H, (good,), "").verdict is H
    with pytest.raises(EvidenceError, match="without deciding evidence"):
        HypothesisReport("h", H, (), "")
    with pytest.raises(EvidenceError, match="not proved"):
        HypothesisReport("h", H, (good, sampled), "")
    with pytest.raises(EvidenceError, match="without evidence that implies FAILS"):
        HypothesisReport("h", F, (good,), "")
    with pytest.raises(EvidenceError, match="refutes"):
        HypothesisReport("h", U, (bad,), "")
    with pytest.raises(EvidenceError, match="snake_case"):
        HypothesisReport("Bad Name", U, (), "")
    # a float / sampled refutation is allowed to give FAILS
    assert (
        HypothesisReport(
            "h", F, (Evidence.point("x", -1, method=Method.SAMPLED, relation=">", threshold=0),), ""
        ).verdict
        is F
    )


_method = st.sampled_from(list(Method))
_frac = st.fractions(min_value=-5, max_value=5, max_denominator=50)


@st.composite
def _evidence(draw):
    a, b = sorted([draw(_frac), draw(_frac)])
    lo = None if draw(st.booleans()) and draw(st.booleans()) else a
    hi = None if draw(st.booleans()) and draw(st.booleans()) else b
    if draw(st.booleans()):
        return Evidence("q", lo, hi, draw(_method))
    return Evidence(
        "q", lo, hi, draw(_method), draw(st.sampled_from(["<=", "<", ">=", ">", "=="])), draw(_frac)
    )


@settings(max_examples=120, deadline=None)
@given(st.lists(_evidence(), max_size=5))
@example([Evidence.point("q", 1, method=Method.SAMPLED, relation=">", threshold=0)])
@example(
    [
        Evidence.point("q", 1, method=Method.SOLVER, relation=">", threshold=0),
        Evidence.point("q", 1, method=Method.EXACT, relation=">", threshold=0),
    ]
)
def test_property_no_holds_from_float_or_sampled(evidence):
    """Whatever the evidence, HOLDS is produced only when every deciding item is rigorous and proves it."""
    rep = HypothesisReport.from_evidence("h", evidence, holds="", fails="", undecided="")
    deciding = [e for e in evidence if e.deciding]
    if any(not e.method.rigorous for e in deciding) or not deciding:
        assert rep.verdict is not H
    if rep.verdict is H:
        assert all(e.method.rigorous and e.implies() is H for e in deciding)
    # direct construction of HOLDS with any non-rigorous deciding evidence is refused
    if any(not e.method.rigorous for e in deciding):
        with pytest.raises(EvidenceError):
            HypothesisReport("h", H, tuple(evidence), "")


def test_theorem_report_json():
    ev = Evidence.point("x", Fraction(1, 3), relation=">", threshold=0, data={"k": [1]})
    rep = TheoremReport(
        "10",
        "t",
        "ref",
        (HypothesisReport("a_b", H, (ev,), "ok"), HypothesisReport("c", U, (), "give more")),
        "concl",
        {"p": "2/1"},
    )
    assert rep.verdict is U
    js = rep.to_json()
    assert set(js) >= {"theorem", "verdict", "hypotheses", "quantities"}
    assert js["verdict"] == "undecided"
    h = js["hypotheses"][0]
    assert set(h) >= {"name", "verdict", "evidence", "message"} and h["verdict"] == "holds"
    assert h["evidence"][0]["lo"] == "1/3" and h["evidence"][0]["method"] == "exact"
    assert js["conclusion"]["status"] == "to measure"
    assert rep.hypothesis("c").message == "give more"
    with pytest.raises(KeyError):
        rep.hypothesis("zzz")
    assert "1/3" not in ev.summary() and "0.333333" in ev.summary()


@pytest.mark.parametrize(
    "x,shown",
    [
        (Fraction(1, 3), "0.333333"),
        (Fraction(10**400, 3), "3.33333e+399"),
        (Fraction(1, 10**400), "1e-400"),
        (Fraction(5, 2), "2.5"),
    ],
)
def test_summary_formats_huge_and_tiny_bounds_exactly(x, shown):
    ev = Evidence.point("x", x, method=Method.EXACT, relation=">", threshold=0)
    assert ev.summary() == f"x: needs > 0, is {shown}: holds (exact)"
    js = ev.to_json()
    assert js["lo_approx"] == (None if x > 10**308 else float(x))


@pytest.mark.parametrize(
    "lo,hi,rel,t,method,text",
    [
        (
            Fraction(127823, 100000),
            Fraction(127823, 100000),
            "<=",
            Fraction(1, 2),
            Method.INTERVAL,
            "D: needs <= 0.5, is 1.27823: fails (interval)",
        ),
        (
            Fraction(1278229, 10**6),
            Fraction(1278231, 10**6),
            "<=",
            Fraction(1, 2),
            Method.INTERVAL,
            "D: needs <= 0.5, is [1.27823, 1.27823]: fails (interval)",
        ),
        (
            Fraction(1, 10),
            Fraction(2, 10),
            "<=",
            Fraction(1, 2),
            Method.EXACT,
            "D: needs <= 0.5, is [0.1, 0.2]: holds (exact)",
        ),
        (
            Fraction(4, 10),
            Fraction(6, 10),
            "<=",
            Fraction(1, 2),
            Method.INTERVAL,
            "D: needs <= 0.5, is [0.4, 0.6]: undecided (interval)",
        ),
        (
            Fraction(1, 10),
            Fraction(1, 10),
            "<",
            Fraction(1, 2),
            Method.SAMPLED,
            "D: needs < 0.5, is 0.1: consistent, not proved (sampled)",
        ),
        (
            None,
            Fraction(3),
            ">",
            Fraction(0),
            Method.INTERVAL,
            "D: needs > 0, is [-inf, 3]: undecided (interval)",
        ),
        (
            Fraction(3, 10**5),
            None,
            ">=",
            Fraction(0),
            Method.INTERVAL,
            "D: needs >= 0, is [3e-05, inf]: holds (interval)",
        ),
        (
            Fraction(2),
            Fraction(2),
            "==",
            Fraction(0),
            Method.EXACT,
            "D: needs == 0, is 2: fails (exact)",
        ),
    ],
)
def test_summary_says_what_was_required_what_was_found_and_whether_it_holds(
    lo, hi, rel, t, method, text
):
    """A FAILS row read 'D = [1.27823, 1.27823] <= 0.5 (interval)', as if it held (issue 13)."""
    assert Evidence("D", lo, hi, method, rel, t).summary() == text


def test_summary_of_statements_and_informational_evidence():
    assert Evidence.statement("s", True, method=Method.EXACT).summary() == "s: proved (exact)"
    assert (
        Evidence.statement("s", False, method=Method.INTERVAL).summary() == "s: refuted (interval)"
    )
    assert (
        Evidence.statement("s", True, method=Method.SAMPLED).summary()
        == "s: consistent, not proved (sampled)"
    )
    assert (
        Evidence("x", Fraction(1, 3), Fraction(1, 2), Method.SOLVER).summary()
        == "x = [0.333333, 0.5] (solver)"
    )
