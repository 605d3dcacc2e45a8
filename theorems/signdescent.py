"""Hypotheses of the smoothed-sign-descent theorems as predicates (docs/theory.md section 8.6).

arXiv 2410.14158 (Wang and Klabjan) states its results for regression data ``X beta = y`` under:

- Assumption 3.2: every target is nonzero, and after a column permutation ``X^T X`` is block diagonal
  with N rank-one blocks;
- Assumption 3.8: each block has size two (every row has exactly two nonzeros, D = 2N), so
  ``B^(n) = lambda_n (c_n, s_n)(c_n, s_n)^T`` with ``|c_n| >= |s_n| > 0``;
- Assumption 3.3 bounds eps and alpha by row quantities (its eqs. 18-19, `assumption_3_3`); decided
  exactly on squared forms (no square root is compared), UNDECIDED only when the rows are not the
  blocks (shared columns or a zero row), where the paper's per-row notation does not apply.

Decisions are exact (integer arithmetic on the float64 data). Assumption 3.2 is decided in two ways:
rows with pairwise disjoint supports and no zero row prove it directly (``X^T X = sum_n x_n x_n^T``
with disjoint blocks); otherwise the literal statement is decided on the exact matrix ``X^T X``
(its nonzero pattern's connected components must be exactly N blocks, each of exact rank one), for
D up to `LITERAL_LIMIT`; beyond that the answer is UNDECIDED.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from certify.errors import MdcertError
from certify.exact import dyadic
from certify.regression.problem import RegressionProblem
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict

__all__ = [
    "assumption_3_2",
    "assumption_3_3",
    "assumption_3_8",
    "LITERAL_LIMIT",
    "positive_exact",
    "row_quantities",
]

#: the largest D for which X^T X (D x D) is formed exactly to decide Assumption 3.2 literally
LITERAL_LIMIT = 2000


def _targets_nonzero(problem: RegressionProblem) -> Evidence:
    zero = np.flatnonzero(np.asarray(problem.y) == 0)
    return Evidence.statement(
        "every target y_n != 0",
        zero.size == 0,
        method=Method.EXACT,
        detail="all nonzero" if zero.size == 0 else f"y_{int(zero[0])} = 0",
    )


def _disjoint_rows(X: np.ndarray) -> tuple[bool, str]:
    nz = np.asarray(X) != 0
    if not nz.any(axis=1).all():
        return False, f"row {int(np.flatnonzero(~nz.any(axis=1))[0])} is zero"
    shared = np.flatnonzero(nz.sum(axis=0) > 1)
    return (
        shared.size == 0,
        "" if shared.size == 0 else f"column {int(shared[0])} is shared by two rows",
    )


def _literal_blocks(problem: RegressionProblem) -> tuple[bool, str]:
    """Exactly: the nonzero part of X^T X splits into N connected blocks, each of rank one."""
    import flint

    from certify.regression.intmat import IntMatrix

    Z = dyadic(problem.X).ints
    G = IntMatrix(np.ascontiguousarray(Z.T)).gram()  # X^T X up to a power of two, exact
    D = G.shape[0]
    parent = list(range(D))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(G != 0)):
        a, b = find(int(i)), find(int(j))
        if a != b:
            parent[a] = b
    comps: dict[int, list[int]] = {}
    for i in range(D):
        if G[i, i] != 0:
            comps.setdefault(find(i), []).append(i)
    if len(comps) != problem.N:
        return False, f"X^T X has {len(comps)} nonzero diagonal block(s), not N = {problem.N}"
    for cols in comps.values():
        sub = flint.fmpz_mat([[int(G[i, j]) for j in cols] for i in cols])
        if sub.rank() != 1:
            return (
                False,
                f"a block of X^T X on columns {cols[:4]}{'...' if len(cols) > 4 else ''} has rank {sub.rank()}",
            )
    return True, f"{problem.N} blocks of rank one"


def assumption_3_2(problem: RegressionProblem) -> HypothesisReport:
    """Assumption 3.2 (module docstring)."""
    evidence = [_targets_nonzero(problem)]
    disjoint, why = _disjoint_rows(problem.X)
    if disjoint:
        evidence.append(
            Evidence.statement(
                "X^T X block diagonal with N rank-one blocks",
                True,
                method=Method.EXACT,
                detail="rows have pairwise disjoint supports and none is zero",
            )
        )
    elif problem.D <= LITERAL_LIMIT:
        holds, detail = _literal_blocks(problem)
        evidence.append(
            Evidence.statement(
                "X^T X block diagonal with N rank-one blocks",
                holds,
                method=Method.EXACT,
                detail=detail if holds else f"{detail} ({why})",
            )
        )
    else:
        # deciding but open: the indicator is only known to lie in [0, 1], so the verdict is UNDECIDED
        evidence.append(
            Evidence(
                "X^T X block diagonal with N rank-one blocks",
                Fraction(0),
                Fraction(1),
                Method.EXACT,
                "==",
                Fraction(1),
                detail=f"{why}; D = {problem.D} > {LITERAL_LIMIT}: the literal block test on "
                "X^T X was not run",
            )
        )
    return HypothesisReport.from_evidence(
        "assumption_3_2",
        evidence,
        holds="Assumption 3.2 holds (exact): nonzero targets, X^T X block diagonal with N rank-one blocks",
        fails="Assumption 3.2 fails (exact): "
        + "; ".join(e.detail for e in evidence if e.implies() is Verdict.FAILS),
        undecided="Assumption 3.2 undecided: the rows share columns and D is too large for the exact block test",
    )


def assumption_3_8(problem: RegressionProblem) -> HypothesisReport:
    """Assumption 3.8: block data with exactly two nonzeros per row (D = 2N), both nonzero."""
    nz = np.count_nonzero(np.asarray(problem.X), axis=0)
    per_row = np.count_nonzero(np.asarray(problem.X), axis=1)
    bad_row = np.flatnonzero(per_row != 2)
    evidence = [
        Evidence.statement(
            "D = 2N",
            problem.D == 2 * problem.N,
            method=Method.EXACT,
            detail=f"N = {problem.N}, D = {problem.D}",
        ),
        Evidence.statement(
            "every row has exactly two nonzeros",
            bad_row.size == 0,
            method=Method.EXACT,
            detail="yes"
            if bad_row.size == 0
            else f"row {int(bad_row[0])} has {int(per_row[bad_row[0]])} nonzeros",
        ),
        Evidence.statement(
            "rows have pairwise disjoint supports",
            bool(np.all(nz <= 1)),
            method=Method.EXACT,
            detail="yes"
            if np.all(nz <= 1)
            else f"column {int(np.flatnonzero(nz > 1)[0])} is shared",
        ),
    ]
    return HypothesisReport.from_evidence(
        "assumption_3_8",
        evidence,
        holds="Assumption 3.8 holds (exact): N blocks of size two, both entries nonzero (|cos| >= |sin| > 0 by "
        "ordering the two columns of each block)",
        fails="Assumption 3.8 fails (exact): "
        + "; ".join(e.detail for e in evidence if e.implies() is Verdict.FAILS),
        undecided="Assumption 3.8 undecided",
    )


def positive_exact(name: str, value: float) -> Fraction:
    """The exact value of a finite float > 0 (MdcertError otherwise)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise MdcertError(f"invalid {name}: {value!r}; give a finite number > 0") from None
    if not math.isfinite(v) or v <= 0:
        raise MdcertError(f"invalid {name}: {value!r}; must be finite and > 0 (docs/theory.md 8.6)")
    return Fraction(v)


def _abs_fraction(v: float) -> Fraction:
    return Fraction(abs(float(v)))


def row_quantities(problem: RegressionProblem) -> list[tuple[Fraction, Fraction, Fraction]]:
    """Per row n, exactly: ``(m_n, S_n, |y_n|)`` with ``m_n`` the smallest nonzero ``|x_i^(n)|`` and
    ``S_n = sum_k |x_k^(n)|`` (0, 0 for a zero row); the float64 data are read exactly."""
    X, y = np.asarray(problem.X, dtype=np.float64), np.asarray(problem.y, dtype=np.float64)
    out = []
    for n in range(problem.N):
        vals = [_abs_fraction(v) for v in X[n][X[n] != 0]]
        if not vals:
            out.append((Fraction(0), Fraction(0), _abs_fraction(y[n])))
            continue
        den = max(v.denominator for v in vals)  # powers of two: a common denominator
        S = Fraction(sum(v.numerator * (den // v.denominator) for v in vals), den)
        out.append((min(vals), S, _abs_fraction(y[n])))
    return out


def _ball(x) -> str:
    """A rational (exact when dyadic) or an arb ball as text: ``= v`` when exact, else ``in [ball]``."""
    from theorems.balls import arb_fraction

    b = x if not isinstance(x, (Fraction, int)) else arb_fraction(x)
    return f"= {b.str(17, radius=False)}" if b.is_exact() else f"in {b.str(12)}"


def _sides(which: str, ok: bool, E: Fraction, A: Fraction, m: Fraction, S: Fraction, Y: Fraction):
    """The unsquared sides of eq. (18) / (19) left / (19) right as outward-rounded balls."""
    from theorems.balls import arb_fraction

    rel = "<=" if ok else ">"
    a_m, a_S, a_Y = arb_fraction(m), arb_fraction(S), arb_fraction(Y)
    if which == "18":
        rhs = a_m * a_Y * a_Y.sqrt() / (9 * (2 * a_S).sqrt())
        return f"eps {_ball(E)} {rel} |x_i||y_n|^(3/2) / (9 sqrt(2 S_n)) {_ball(rhs)}"
    if which == "19a":
        lhs = "= inf" if m * Y == 0 else _ball(9 * arb_fraction(E) / (4 * a_m * a_Y))
        return f"9 eps / (4 |x_i y_n|) {lhs} {rel} alpha {_ball(A)}"
    rhs = (a_Y / (2 * a_S)).sqrt() / 3
    return f"alpha {_ball(A)} {rel} sqrt(|y_n| / (2 S_n)) / 3 {_ball(rhs)}"


def _binding(pairs: list[tuple[Fraction, Fraction]]) -> int:
    """The row whose exact inequality ``lhs <= rhs`` has the least room, the smallest ``rhs / lhs``
    (every lhs is > 0 here: eps, alpha > 0 and S_n > 0); ties go to the first row."""
    return min(range(len(pairs)), key=lambda n: pairs[n][1] / pairs[n][0])


def assumption_3_3(problem: RegressionProblem, *, eps: float, alpha: float) -> HypothesisReport:
    """Assumption 3.3 of arXiv 2410.14158 (docs/theory.md section 8.6): for every row n and every
    nonzero entry ``x_i^(n)``, with ``S_n = sum_k |x_k^(n)|``,

    - eq. (18): ``0 <= eps <= |x_i^(n)| |y_n|^(3/2) / (9 sqrt(2 S_n))``,
    - eq. (19): ``9 eps / (4 |x_i^(n) y_n|) <= alpha <= sqrt(|y_n| / (2 S_n)) / 3``.

    Decided exactly: all sides are non-negative, so (18) is ``162 eps^2 S_n <= m_n^2 |y_n|^3`` and the
    right part of (19) is ``18 alpha^2 S_n <= |y_n|`` (squares of both sides), with ``m_n`` the smallest
    nonzero ``|x_i^(n)|`` (the binding i); the left part of (19) is ``9 eps <= 4 alpha m_n |y_n|``. Each
    evidence names the binding row and both unsquared sides as outward-rounded balls. The notation
    ``x_i^(n)`` presumes the rows' supports are the blocks of Assumption 3.2 (pairwise disjoint, no
    zero row); otherwise the answer is UNDECIDED. ``eps`` and ``alpha`` must be finite and > 0
    (the stability constant of eq. 15 is positive; MdcertError otherwise)."""
    E, A = positive_exact("eps", eps), positive_exact("alpha", alpha)
    disjoint, why = _disjoint_rows(problem.X)
    if not disjoint:
        info = Evidence(
            "rows of X as the blocks of Assumption 3.2",
            None,
            None,
            Method.EXACT,
            detail=f"{why}: the entries x_i^(n) of eqs. 18-19 are not defined",
        )
        return HypothesisReport(
            "assumption_3_3",
            Verdict.UNDECIDED,
            (info,),
            f"Assumption 3.3 undecided: {why}, so the per-row entries x_i^(n) of eqs. 18-19 "
            "(defined when the rows' supports are the blocks of Assumption 3.2) do not apply",
        )
    rows = row_quantities(problem)
    checks = (
        (
            "18",
            "eq. (18): 162 eps^2 S_n <= m_n^2 |y_n|^3",
            [(162 * E * E * S, m * m * Y**3) for m, S, Y in rows],
        ),
        (
            "19a",
            "eq. (19) left: 9 eps <= 4 alpha m_n |y_n|",
            [(9 * E, 4 * A * m * Y) for m, S, Y in rows],
        ),
        (
            "19b",
            "eq. (19) right: 18 alpha^2 S_n <= |y_n|",
            [(18 * A * A * S, Y) for m, S, Y in rows],
        ),
    )
    evidence = []
    for which, quantity, pairs in checks:
        n = _binding(pairs)
        lhs, rhs = pairs[n]
        sides = _sides(which, lhs <= rhs, E, A, *rows[n])
        evidence.append(
            Evidence(
                quantity,
                lhs,
                lhs,
                Method.EXACT,
                "<=",
                rhs,
                detail=f"binding row n = {n} (i: the smallest nonzero |x_i^(n)|): {sides}",
                data={"row": n},
            )
        )
    return HypothesisReport.from_evidence(
        "assumption_3_3",
        evidence,
        holds=f"Assumption 3.3 holds (exact) for eps = {float(E):g}, alpha = {float(A):g}: eqs. 18-19 "
        f"on all {problem.N} rows",
        fails="Assumption 3.3 fails (exact): "
        + "; ".join(
            f"{e.quantity.split(':')[0]} at row {e.data['row']}: {e.detail.split('): ', 1)[1]}"
            for e in evidence
            if e.implies() is Verdict.FAILS
        ),
        undecided="Assumption 3.3 undecided",
    )
