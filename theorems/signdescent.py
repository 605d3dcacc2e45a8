"""Hypotheses of the smoothed-sign-descent theorems as predicates (docs/theory.md section 8.6).

arXiv 2410.14158 (Wang and Klabjan) states its results for regression data ``X beta = y`` under:

- Assumption 3.2: every target is nonzero, and after a column permutation ``X^T X`` is block diagonal
  with N rank-one blocks;
- Assumption 3.8: each block has size two (every row has exactly two nonzeros, D = 2N), so
  ``B^(n) = lambda_n (c_n, s_n)(c_n, s_n)^T`` with ``|c_n| >= |s_n| > 0``;
- Assumption 3.3 bounds eps and alpha by data quantities (its eqs. 18-19). Its constants could not be
  confirmed from the paper's text here, so it is reported UNDECIDED with the data quantities it
  involves, never HOLDS or FAILS.

Decisions are exact (integer arithmetic on the float64 data). Assumption 3.2 is decided in two ways:
rows with pairwise disjoint supports and no zero row prove it directly (``X^T X = sum_n x_n x_n^T``
with disjoint blocks); otherwise the literal statement is decided on the exact matrix ``X^T X``
(its nonzero pattern's connected components must be exactly N blocks, each of exact rank one), for
D up to `LITERAL_LIMIT`; beyond that the answer is UNDECIDED.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from certify.exact import dyadic
from certify.regression.problem import RegressionProblem
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict

__all__ = ["assumption_3_2", "assumption_3_3", "assumption_3_8", "LITERAL_LIMIT"]

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


def assumption_3_3(problem: RegressionProblem, *, eps: float, alpha: float) -> HypothesisReport:
    """Assumption 3.3 (bounds on eps and alpha): UNDECIDED with the data quantities it involves, since its
    constants could not be confirmed from the paper's text (module docstring)."""
    X, y = np.asarray(problem.X), np.asarray(problem.y)
    rows = []
    for n in range(problem.N):
        s = float(np.abs(X[n]).sum())
        rows.append(
            f"row {n}: |y|={abs(y[n]):.4g}, sum|x|={s:.4g}, min nonzero |x|="
            f"{float(np.abs(X[n][X[n] != 0]).min()) if np.any(X[n]) else 0:.4g}"
        )
    info = Evidence(
        "data quantities of eqs. 18-19",
        None,
        None,
        Method.EXACT,
        detail=f"eps = {eps:g}, alpha = {alpha:g}; "
        + "; ".join(rows[:4])
        + (f"; ... {len(rows)} rows" if len(rows) > 4 else ""),
    )
    return HypothesisReport(
        "assumption_3_3",
        Verdict.UNDECIDED,
        (info,),
        "Assumption 3.3 undecided: its constants (eqs. 18-19) could not be confirmed from the "
        "paper's text here; compare eps and alpha with the quantities listed",
    )
