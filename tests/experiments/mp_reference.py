"""A high-precision reference for the tests: the exact mirror-descent update in mpmath (docs/theory.md
section 2), logistic loss, fixed decoder, padding honored; float64 inputs are read exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

__all__ = ["mp_md_path"]


def _mpf(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def mp_md_path(
    problem, W0: np.ndarray, *, p, lr, steps: int, dps: int = 40, normalize: bool = True
) -> np.ndarray:
    """``W(steps)`` of mirror descent from ``W0`` in mpmath, rounded to float64 at the end.

    The softmax output is a plain sum of ``a_t h_t`` and the gradient is formed from ``h_t - f`` (the
    textbook formula, independent of the saturation-safe one under test). That cancellation costs
    about ``gap / ln 10`` digits (gap: the largest top-vs-runner-up logit gap), so each step runs at
    ``dps + gap / ln 10`` digits: ``dps`` correct digits whatever the saturation.
    """
    P, eta = _mpf(p), _mpf(lr)
    q = P / (P - 1)
    n, d = problem.n, problem.d
    L = [int(k) for k in problem.valid_lengths]
    X = [[[_mpf(float(c)) for c in problem.X[i, t]] for t in range(L[i])] for i in range(n)]
    z = [[_mpf(float(c)) for c in problem.z[i]] for i in range(n)]
    v = [_mpf(float(c)) for c in problem.v]
    y = [int(c) for c in problem.y]
    with mpmath.workdps(dps):
        h = [[mpmath.fsum(a * b for a, b in zip(x, v)) for x in X[i]] for i in range(n)]
    W = [[_mpf(float(W0[j, k])) for k in range(d)] for j in range(d)]
    for _ in range(steps):
        with mpmath.workdps(dps):
            S = [
                [
                    mpmath.fsum(
                        x[j] * mpmath.fsum(W[j][k] * z[i][k] for k in range(d)) for j in range(d)
                    )
                    for x in X[i]
                ]
                for i in range(n)
            ]
            gap = max(float(sorted(s)[-1] - sorted(s)[-2]) for s in S)
        with mpmath.workdps(dps + math.ceil(gap / math.log(10)) + 10):
            G = [[mpmath.mpf(0)] * d for _ in range(d)]
            for i in range(n):
                Wz = [mpmath.fsum(W[j][k] * z[i][k] for k in range(d)) for j in range(d)]
                s = [mpmath.fsum(x[j] * Wz[j] for j in range(d)) for x in X[i]]
                smax = max(s)
                e = [mpmath.exp(si - smax) for si in s]
                Z = mpmath.fsum(e)
                a = [ei / Z for ei in e]
                f = mpmath.fsum(ai * hi for ai, hi in zip(a, h[i]))
                g = -y[i] / (1 + mpmath.exp(y[i] * f)) / n
                xa = [
                    mpmath.fsum(a[t] * (h[i][t] - f) * X[i][t][j] for t in range(L[i]))
                    for j in range(d)
                ]
                for j in range(d):
                    for k in range(d):
                        G[j][k] += g * xa[j] * z[i][k]
            if normalize:
                nq = mpmath.fsum(abs(c) ** q for row in G for c in row) ** (1 / q)
                G = [[c / nq for c in row] for row in G]
            for j in range(d):
                for k in range(d):
                    w = W[j][k]
                    Q = mpmath.sign(w) * abs(w) ** (P - 1) - eta * G[j][k]
                    W[j][k] = mpmath.sign(Q) * abs(Q) ** (1 / (P - 1))
    return np.array([[float(c) for c in row] for row in W])
