"""Theorem 3.9 and Corollaries 3.10-3.12 of arXiv 2410.14158: their explicit terms as balls
(docs/theory.md section 8.6).

The statements bound the delta-KKT error of the limit of smoothed sign descent for the program
``min E(beta, 0) s.t. X beta = y`` (the paper's eqs. 22-23) on block data of size two (Assumption 3.8).
What the paper makes explicit, per block n with row entries ``(a, b)``, ``lambda_n = a^2 + b^2`` and
``|cos theta_n| - |sin theta_n| = ||a| - |b|| / sqrt(lambda_n)``:

- ``Mbar_n = (|cos| - |sin|) lambda_n^(-1/4) |y_n|^(1/2)``: the eps-free part of ``M_+^(n)`` (Theorem 3.9,
  Corollary 3.11) and the constant of Corollaries 3.10 / 3.12 (eqs. 24-26);
- ``Mminus_n = (|cos| - |sin|) ((2 lambda_n)^(-1/4) |y_n|^(1/2) - alpha)``: the eps-free part of ``M_-^(n)``;
- ``slope_n = (|cos| - |sin|) sqrt(2) / (4 lambda_n^(1/2) |y_n|)``: the coefficient of eps in eqs. 24 / 26;
- ``eps_bar``: the right end of ``I_eps = [0, eps_bar]``, the eps allowed by Assumption 3.3 at this alpha.

Not explicit in the paper, so never evaluated here: the ``O(eps)`` term of ``M_+`` and the
``O(sqrt(eps))`` term of ``M_-`` (so no bound on delta at a given eps follows), and the intervals
``I' subset I_eps`` (Corollary 3.10) and ``J subset I_eps`` (Corollary 3.12), which are only shown to exist.
Every quantity is an outward-rounded ``arb`` ball turned into exact ``Fraction`` end points.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from certify.errors import MdcertError
from certify.regression.problem import RegressionProblem
from theorems.balls import arb_fraction, enclosure
from theorems.signdescent import assumption_3_8, positive_exact, row_quantities
from theorems.verdict import Verdict

__all__ = ["SIGN_THEOREMS", "BlockTerms", "LeadingTerms", "SignStatement", "leading_terms"]

Interval = tuple[Fraction | None, Fraction | None]


@dataclass(frozen=True)
class SignStatement:
    """One result of arXiv 2410.14158: its hypotheses, its explicit terms, what is not explicit."""

    number: str
    title: str
    hypotheses: tuple[str, ...]
    explicit: str
    not_explicit: str


SIGN_THEOREMS: dict[str, SignStatement] = {
    "3.9": SignStatement(
        "3.9",
        "N = 1: beta(t) converges to an interpolating beta_inf, delta-KKT for eq. 23",
        ("assumption_3_2", "assumption_3_3", "assumption_3_8"),
        "delta(eps) <= max(|M_+|, |M_-|); eps-free parts Mbar_1 and Mminus_1",
        "the O(eps) term of M_+ and the O(sqrt(eps)) term of M_-",
    ),
    "3.10": SignStatement(
        "3.10",
        "N = 1: on some interval I' of I_eps, delta(eps) <= Mbar_1 - slope_1 eps (eq. 24)",
        ("assumption_3_2", "assumption_3_3", "assumption_3_8"),
        "Mbar_1, slope_1 and I_eps = [0, eps_bar]",
        "the interval I' (only its existence is proved)",
    ),
    "3.11": SignStatement(
        "3.11",
        "N > 1: deltabar-KKT for eq. 23 with deltabar(eps) <= sum_n max(|M_+^(n)|, |M_-^(n)|)",
        ("assumption_3_2", "assumption_3_3", "assumption_3_8"),
        "eps-free parts Mbar_n and Mminus_n per block",
        "the O(eps) and O(sqrt(eps)) terms of each M_+^(n), M_-^(n)",
    ),
    "3.12": SignStatement(
        "3.12",
        "N > 1: on some interval J of I_eps, deltabar(eps) <= sum_n Mbar_n - (sum_n slope_n) eps "
        "(eqs. 25-26)",
        ("assumption_3_2", "assumption_3_3", "assumption_3_8"),
        "sum_n Mbar_n, sum_n slope_n and I_eps = [0, eps_bar]",
        "the interval J (only its existence is proved)",
    ),
}


@dataclass(frozen=True)
class BlockTerms:
    """The explicit terms of one block (row n), each as an exact enclosure ``(lo, hi)``."""

    row: int
    lam: Fraction
    cos_minus_sin: Interval
    mbar: Interval
    mminus: Interval
    slope: Interval


@dataclass(frozen=True)
class LeadingTerms:
    """Every block's terms, their sums (Corollaries 3.11-3.12), ``I_eps`` and what is not explicit.

    ``alpha_admissible`` is the exact verdict of the right part of eq. 19 at this alpha; ``eps_bar``
    is meaningful only when it holds (otherwise no eps satisfies Assumption 3.3)."""

    alpha: Fraction
    blocks: tuple[BlockTerms, ...]
    mbar_sum: Interval
    slope_sum: Interval
    limit_bound: Interval
    eps_bar: Interval
    alpha_admissible: bool
    not_explicit: tuple[str, ...]


def _terms(
    n: int, a: Fraction, b: Fraction, Y: Fraction, A: arb
) -> tuple[BlockTerms, arb, arb, arb]:
    lam = a * a + b * b
    L, aY = arb_fraction(lam), arb_fraction(Y)
    cms = arb_fraction(abs(abs(a) - abs(b))) / L.sqrt()  # |cos theta_n| - |sin theta_n| >= 0
    mbar = cms * aY.sqrt() / L.root(4)
    mminus = cms * (aY.sqrt() / (2 * L).root(4) - A)
    slope = cms * arb(2).sqrt() / (4 * L.sqrt() * aY)
    terms = BlockTerms(n, lam, enclosure(cms), enclosure(mbar), enclosure(mminus), enclosure(slope))
    return terms, mbar, mminus, slope


def _hull_op(op, x: Interval, y: Interval) -> Interval:
    """An enclosure of ``op(u, v)`` (op = min or max, monotone in both) for u in x, v in y."""
    return op(x[0], y[0]), op(x[1], y[1])


def leading_terms(problem: RegressionProblem, *, alpha: float) -> LeadingTerms:
    """The explicit terms of Theorem 3.9 / Corollaries 3.10-3.12 on block data (module docstring).

    ``limit_bound`` encloses ``sum_n max(|Mbar_n|, |Mminus_n|)``, the limit as eps -> 0+ of the bound
    of Theorem 3.9 / Corollary 3.11 (their O-terms vanish there). Raises MdcertError unless Assumption
    3.8 holds exactly (the terms are defined on 2-blocks) and every target is nonzero, or when alpha
    is not finite and > 0."""
    A = positive_exact("alpha", alpha)
    if assumption_3_8(problem).verdict is not Verdict.HOLDS:
        raise MdcertError("the explicit terms need blocks of size two (Assumption 3.8 must hold)")
    y = np.asarray(problem.y, dtype=np.float64)
    if np.any(y == 0):
        raise MdcertError("the explicit terms need every target y_n != 0 (Assumption 3.2)")
    X = np.asarray(problem.X, dtype=np.float64)
    aA = arb_fraction(A)
    blocks, mbar_sum, slope_sum = [], arb(0), arb(0)
    limit: Interval = (Fraction(0), Fraction(0))
    eps_bar: Interval | None = None
    alpha_ok = True
    for n, (m, S, Y) in enumerate(row_quantities(problem)):
        a, b = (Fraction(float(v)) for v in X[n][X[n] != 0])
        bt, mbar, mminus, slope = _terms(n, a, b, Y, aA)
        blocks.append(bt)
        mbar_sum, slope_sum = mbar_sum + mbar, slope_sum + slope
        worst = _hull_op(max, enclosure(abs(mbar)), enclosure(abs(mminus)))
        limit = (limit[0] + worst[0], limit[1] + worst[1])
        aY = arb_fraction(Y)
        e18 = arb_fraction(m) * aY * aY.sqrt() / (9 * (2 * arb_fraction(S)).sqrt())
        e19 = (4 * A * m * Y / 9, 4 * A * m * Y / 9)
        row_bar = _hull_op(min, enclosure(e18), e19)
        eps_bar = row_bar if eps_bar is None else _hull_op(min, eps_bar, row_bar)
        alpha_ok = alpha_ok and 18 * A * A * S <= Y
    return LeadingTerms(
        A,
        tuple(blocks),
        enclosure(mbar_sum),
        enclosure(slope_sum),
        limit,
        eps_bar,
        alpha_ok,
        (
            "O(eps) in M_+^(n) and O(sqrt(eps)) in M_-^(n): no bound on delta at a given eps",
            "the intervals I' (Corollary 3.10) and J (Corollary 3.12): existence only",
        ),
    )
