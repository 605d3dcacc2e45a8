"""Certified feasibility of ``A w >= 1`` (docs/theory.md sections 3-4, docs/theory.md section 4.5).

Feasible iff some ``w`` has ``A w > 0`` (then ``w / min A w`` satisfies ``A w >= 1``); infeasible
iff (Gordan) some ``lam >= 0, 1^T lam = 1, A^T lam = 0``. A float LP (scipy HiGHS) proposes a
point or a multiplier; the verdict is only returned after an exact check on the exact integers:
``min Z w > 0`` for the point, or an exact rational null vector ``Z_S^T lam = 0, lam >= 0`` on a
support suggested by the LP. When neither check succeeds the exact LP solver ``esolver``
(Debian package ``qsopt-ex``) is tried if installed; otherwise the verdict is ``None`` (not proven).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np

from certify.blas import single_thread_blas
from certify.certificate import ExactVector
from certify.exact import dyadic
from certify.ops import ExactOps
from certify.problem import AttentionProblem, ConstraintSystem

__all__ = [
    "FeasibilityResult",
    "feasibility",
    "feasibility_system",
    "constraint_system",
    "DENSE_LP_ENTRIES",
]

#: largest dense feasibility LP (rows x (variables + 1)) handed to HiGHS; beyond it nothing is claimed
DENSE_LP_ENTRIES = 4_000_000


class FeasibilityResult(NamedTuple):
    """Certified verdict on ``{w : A w >= 1}`` (docs/theory.md section 4.4).

    Attributes:
        feasible: True (proven feasible), False (proven infeasible) or None (not proven).
        point_exact: exact dyadic ``w`` with ``min A w > 0`` (when feasible).
        gordan_exact: exact ``lam >= 0`` with ``1^T lam = 1`` and ``A^T lam = 0`` (when infeasible).
        method: how the verdict was obtained.
        index: the constraint rows ((i, t) or (i,)), the order of ``gordan_exact``.
    """

    feasible: bool | None
    point_exact: ExactVector | None
    gordan_exact: ExactVector | None
    method: str
    index: tuple[tuple[int, ...], ...]


def constraint_system(problem: AttentionProblem, svm: str, alpha) -> ConstraintSystem:
    from certify.errors import MdcertError

    if svm == "attention":
        return problem.attention_constraints(alpha)
    if svm == "decoder":
        return problem.decoder_constraints(alpha)
    raise MdcertError(f"unknown svm {svm!r}; use 'attention' or 'decoder'")


def feasibility(
    problem: AttentionProblem, *, svm: str = "attention", alpha=None
) -> FeasibilityResult:
    """Certified feasibility of the attention or decoder SVM (docs/theory.md section 3)."""
    return feasibility_system(constraint_system(problem, svm, alpha))


def check_point(ops: ExactOps, w: np.ndarray) -> ExactVector | None:
    """The exact dyadic copy of float ``w`` when ``min Z w > 0`` exactly, else None."""
    if not np.all(np.isfinite(w)) or not np.any(w):
        return None
    dw = dyadic(np.asarray(w, dtype=np.float64))
    ints = [int(k) for k in dw.ints.ravel()]
    if min(ops.matvec(ints)) > 0:
        return ExactVector.from_dyadic(ints, dw.exp)
    return None


def _gordan_from_support(
    ops: ExactOps, support: np.ndarray, lam_float: np.ndarray
) -> ExactVector | None:
    """Exact ``lam >= 0`` supported on ``support`` with ``Z^T lam = 0``, guided by ``lam_float``."""
    import flint

    sub = ops.subset(support)
    k = len(support)
    m = sub.m  # equations of Z_S^T lam = 0
    rng = np.random.default_rng(0)
    eq_sets = []
    if m > 3 * k + 10:
        eq_sets.append(np.sort(rng.choice(m, size=3 * k + 10, replace=False)))
    eq_sets.append(np.arange(m))
    Lobj, Robj = sub.L, sub.R
    for eqs in eq_sets:
        # exact integer rows of Z_S^T restricted to equations eqs: entry (j, r) = Z[r, j]
        if sub.kind == "attention":
            jj, kk = np.divmod(eqs, sub.d)
            block = (Lobj[:, jj] * Robj[:, kk]).T  # len(eqs) x k
        else:
            block = Lobj[:, eqs].T
        M = flint.fmpz_mat(len(eqs), k, [int(v) for v in block.ravel()])
        B, nullity = M.nullspace()
        if nullity == 0:
            return None
        basis = np.array([[int(B[i, j]) for j in range(nullity)] for i in range(k)], dtype=object)
        if nullity == 1:
            cands = [basis[:, 0]]
        else:
            # columns scaled by exact powers of two into float range (a basis of data from 5e-324 to 1
            # has integers beyond 2**1024); only a candidate: it is re-checked exactly below
            shifts = [
                max(0, max(abs(int(x)) for x in basis[:, j]).bit_length() - 60)
                for j in range(nullity)
            ]
            Bf = np.array(
                [[float(int(basis[i, j]) >> shifts[j]) for j in range(nullity)] for i in range(k)]
            )
            c, *_ = np.linalg.lstsq(Bf, lam_float[support], rcond=None)
            if not np.all(np.isfinite(c)):
                continue
            fr = [Fraction(float(x)).limit_denominator(10**12) / 2**s for x, s in zip(c, shifts)]
            den = math.lcm(*[f.denominator for f in fr])
            coef = np.array([f.numerator * (den // f.denominator) for f in fr], dtype=object)
            cands = [basis.dot(coef)]
        for v in cands:
            v = np.array([int(x) for x in v], dtype=object)
            if sum(v) < 0:
                v = -v
            if sum(v) <= 0 or any(x < 0 for x in v):
                continue
            if any(x != 0 for x in sub.rmatvec(list(v))):
                continue
            g = math.gcd(*[int(x) for x in v])
            full = [0] * ops.N
            for r, val in zip(support, v):
                full[int(r)] = int(val) // g
            return ExactVector(tuple(full), 0, sum(full))
    return None


def _esolver_gordan(
    ops: ExactOps, *, max_rows: int = 400, timeout: float = 120.0
) -> ExactVector | None:
    """Exact LP (QSopt_ex ``esolver``, Debian package ``qsopt-ex``) for a Gordan vector.

    Solves ``lam >= 0, 1^T lam = 1, Z^T lam = 0`` in exact rational arithmetic; the answer is
    re-checked here with exact integers. None when esolver is missing, the LP is infeasible (then
    the SVM is feasible, but no point is extracted, so nothing is claimed) or anything fails.
    """
    exe = shutil.which("esolver")
    if exe is None or ops.N > max_rows:
        return None
    N = ops.N
    try:
        cols = [
            ops.rmatvec([1 if i == r else 0 for i in range(N)]) for r in range(N)
        ]  # column r of Z^T
        lines = ["Problem", " gordan", "Minimize", " obj: l0", "Subject To"]
        for j in range(ops.m):
            terms = [
                f"{'+' if cols[r][j] >= 0 else '-'} {abs(cols[r][j])} l{r}"
                for r in range(N)
                if cols[r][j]
            ]
            if terms:
                lines.append(f" c{j}: " + " ".join(terms) + " = 0")
        lines.append(" norm: " + " + ".join(f"l{r}" for r in range(N)) + " = 1")
        lines.append("End")
        with tempfile.TemporaryDirectory() as tmp:
            lp, sol = Path(tmp) / "g.lp", Path(tmp) / "g.sol"
            lp.write_text("\n".join(lines) + "\n")
            subprocess.run(
                [exe, "-L", "-O", str(sol), str(lp)],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if not sol.exists():
                return None
            text = sol.read_text()
        if "status OPTIMAL" not in text or "VARS:" not in text:
            return None
        vals = [Fraction(0)] * N
        for line in text.split("VARS:", 1)[1].split("REDUCED COST:", 1)[0].splitlines():
            name, _, value = line.partition("=")
            name = name.strip()
            if name.startswith("l") and name[1:].isdigit() and value.strip():
                vals[int(name[1:])] = Fraction(value.strip())
        den = math.lcm(*[v.denominator for v in vals])
        ints = [int(v * den) for v in vals]
        if min(ints) < 0 or sum(ints) <= 0 or any(x != 0 for x in ops.rmatvec(ints)):
            return None  # never trust the solver: the exact re-check failed
        return ExactVector(tuple(ints), 0, sum(ints))
    except (OSError, subprocess.SubprocessError, ValueError, ZeroDivisionError):
        return None


def _exact_min_norm_point(ops: ExactOps, *, max_rows: int = 64) -> ExactVector | None:
    """If ``Z Z^T`` is invertible (full row rank), ``w = Z^T (Z Z^T)^{-1} 1`` has ``Z w = 1`` exactly."""
    import flint

    if ops.N > min(ops.m, max_rows):
        return None
    try:
        x = flint.fmpq_mat(ops.gram()).solve(flint.fmpq_mat(ops.N, 1, [1] * ops.N))
    except ZeroDivisionError:
        return None
    vals = [Fraction(int(v.p), int(v.q)) for v in x.entries()]
    den = math.lcm(*[v.denominator for v in vals])
    X = [int(v * den) for v in vals]
    W = ops.rmatvec(X)  # w = W / den (up to the positive factor 2**-exp)
    if min(ops.matvec(W)) <= 0:
        return None
    return ExactVector(tuple(W), 0, 1)


def _normalized_rows(ops: ExactOps) -> tuple[np.ndarray, np.ndarray]:
    """Float rows ``Z_r / 2**s_r`` (largest entry of each factor in [1/2, 1)): float64 overflow and
    underflow of the data's own scale (1e300, subnormals) cannot reach the LP. Solver use only.
    Returns the rows and the shifts ``s_r``."""
    from certify.ops import int_matrix_to_float

    def scaled(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        shift = np.array([max(abs(int(k)).bit_length() for k in row) for row in M], dtype=np.int64)
        return np.stack(
            [
                int_matrix_to_float(np.asarray(row, dtype=object)[None, :], -int(s))[0]
                for row, s in zip(M, shift)
            ]
        ), shift

    L, sL = scaled(ops.L)
    if ops.R is None:
        return L, sL
    R, sR = scaled(ops.R)
    return (L[:, :, None] * R[:, None, :]).reshape(ops.N, ops.m), sL + sR


def feasibility_system(cs: ConstraintSystem) -> FeasibilityResult:
    """Certified feasibility of one constraint system (see module docstring)."""
    with single_thread_blas():
        return _feasibility_system(cs)


def _feasibility_system(cs: ConstraintSystem) -> FeasibilityResult:
    from scipy.optimize import linprog

    ops = ExactOps(cs)
    index = cs.index
    # trivial certificates: a zero row (e.g. a duplicated token) makes A w >= 1 infeasible
    zero = ~np.asarray(cs.left.ints != 0).any(axis=1) if cs.N else np.zeros(0, dtype=bool)
    if cs.right is not None and cs.N:
        zero |= ~np.asarray(cs.right.ints != 0).any(axis=1)
    zero_rows = np.flatnonzero(zero).tolist()
    if zero_rows:
        g = [0] * ops.N
        g[zero_rows[0]] = 1
        return FeasibilityResult(False, None, ExactVector(tuple(g), 0, 1), "zero row", index)
    if (
        ops.N * (ops.m + 1) > DENSE_LP_ENTRIES
    ):  # a dense LP this size takes minutes to hours in HiGHS
        return FeasibilityResult(
            None,
            None,
            None,
            f"not proven (the dense feasibility LP of {ops.N} rows x "
            f"{ops.m} variables is not attempted beyond {DENSE_LP_ENTRIES} entries)",
            index,
        )
    A, shifts = _normalized_rows(
        ops
    )  # row r scaled by a positive power of two: same feasibility, no overflow
    norms = np.linalg.norm(A, axis=1)
    if not np.all(np.isfinite(A)) or not np.all(norms > 0):
        norms = np.ones(ops.N)  # cannot happen: every row has an entry of magnitude in [1/2, 1)
    An = A / norms[:, None]
    N, m = A.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-An, np.ones((N, 1))])
    bounds = [(-1.0, 1.0)] * m + [(None, 1.0)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(N), bounds=bounds, method="highs")
    lam = None
    if res.status == 0:
        w = res.x[:m]
        pt = check_point(ops, w)
        if pt is not None:
            return FeasibilityResult(True, pt, None, "LP point, exact check", index)
        lam = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0) / norms
        lam = np.ldexp(
            lam, -(shifts - shifts.min())
        )  # multipliers of the integer rows Z_r (guidance only)
        # also try the LP point nudged towards the analytic centre of the constraint normals
        pt = check_point(ops, w + 1e-3 * An.mean(axis=0))
        if pt is not None:
            return FeasibilityResult(True, pt, None, "LP point (nudged), exact check", index)
    if lam is not None and lam.sum() > 0:
        lam = lam / lam.sum()
        order = np.argsort(-lam)
        for rel in (1e-9, 1e-12, 1e-6, 1e-3, 0.0):
            support = np.sort(order[: max(1, int(np.sum(lam > rel * lam.max())))])
            if rel == 0.0:
                support = np.arange(N)
            g = _gordan_from_support(ops, support, lam)
            if g is not None:
                return FeasibilityResult(False, None, g, "LP multiplier, exact null vector", index)
    pt = _exact_min_norm_point(ops)
    if pt is not None:
        return FeasibilityResult(
            True, pt, None, "exact rational solve of A A^T x = 1 (full row rank)", index
        )
    esol = _esolver_gordan(ops)
    if esol is not None:
        return FeasibilityResult(False, None, esol, "exact LP (esolver)", index)
    why = (
        "exact LP found no Gordan vector"
        if shutil.which("esolver")
        else "exact LP solver esolver (Debian package qsopt-ex) not installed"
    )
    return FeasibilityResult(None, None, None, f"not proven (float LP inconclusive; {why})", index)
