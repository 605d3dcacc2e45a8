"""Closed forms on block data (Assumption 3.2 of arXiv 2410.14158; docs/theory.md section 8.2).

When the rows of X have pairwise disjoint supports S_n, ``min ||beta||_{3/2} s.t. X beta = y``
separates into one problem per row, with the exact rational solution
``beta_i = sign(y_n x_i) x_i^2 |y_n| / sum_{k in S_n} |x_k|^3`` for i in S_n (0 off every support):
the dual point ``mu_n`` with ``mu_n |mu_n| = y_n / sum_k |x_k|^3`` gives ``beta = phi(X^T mu)`` with
``phi(u) = u |u|`` (q = 3), which satisfies the optimality conditions. The data are dyadic, so every
entry is an exact rational; the common denominator is the lcm of the row sums.
"""

from __future__ import annotations

import math

import numpy as np

from certify.exact import dyadic
from certify.regression.certificate import ExactVec
from certify.regression.problem import RegressionProblem

__all__ = ["disjoint_supports", "block_l32_solution"]


def disjoint_supports(X: np.ndarray) -> bool:
    """Whether the rows of X have pairwise disjoint supports (every column has at most one nonzero)."""
    return bool(np.all(np.count_nonzero(np.asarray(X), axis=0) <= 1))


def block_l32_solution(problem: RegressionProblem) -> ExactVec | None:
    """The exact minimizer of ``||beta||_{3/2}`` over ``X beta = y`` on block data (module docstring),
    or None when the supports overlap or a row is zero with a nonzero target (then no solution)."""
    X = problem.X
    if not disjoint_supports(X):
        return None
    dx, dy = dyadic(X), dyadic(problem.y)
    Z = dx.ints.astype(object)
    num = [0] * problem.D
    sums = []
    for n in range(problem.N):
        s3 = sum(abs(int(v)) ** 3 for v in Z[n])  # sum |x_k|^3 in units of 2^(3 ex)
        if s3 == 0:
            if dy.ints[n] != 0:
                return None
            sums.append(1)
            continue
        sums.append(s3)
    L = math.lcm(*sums)
    for n in range(problem.N):
        yn = int(dy.ints[n])
        for i in np.flatnonzero(Z[n] != 0):
            x = int(Z[n, i])
            # beta_i = sign(y x) x^2 |y| / S, in units: x = x' 2^ex, y = y' 2^ey, S = S' 2^(3ex)
            num[i] = (1 if yn * x > 0 else -1) * x * x * abs(yn) * (L // sums[n])
    # value = num * 2^(2ex + ey - 3ex) / L
    g = math.gcd(L, *num) if any(num) else L
    return ExactVec(tuple(k // g for k in num), dy.exp - dx.exp, L // g)
