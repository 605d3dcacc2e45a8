"""Independent truth for the wrong-HOLDS hunt (tests/theorems/test_wrong_holds.py): near-degenerate tiny
problems and the exact verdict of each hypothesis, computed without any code of `theorems` or `certify`
beyond reading the float64 arrays.

* SVM feasibility and the p = 2 SVM (attention and decoder): brute force over active sets in exact
  rationals. The p = 2 SVM ``min ||w||_2 s.t. A w >= 1`` has a unique optimum w*, the minimum-norm
  solution of ``A_S w = 1`` for its active set S; so w* is the feasible minimum-norm solution of
  smallest norm over all row subsets S, and the system is infeasible exactly when no subset gives a
  feasible one (at most 2^6 subsets here).
* token scores, global and local optimality, the initialization region at p = 2: exact rationals
  (the square roots of the region test are removed by squaring both sides with their signs).
* the step-size inequality and the segment curvature: mpmath interval arithmetic (`mpmath.iv`) at
  400 bits, a verdict only where the enclosures separate.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

__all__ = [
    "exact",
    "attention_rows",
    "decoder_rows",
    "svm2",
    "scores",
    "region_truth",
    "step_truth",
    "curvature",
    "F",
]

F = Fraction


def exact(a) -> np.ndarray:
    """Object array of Fractions equal to a float64 array."""
    a = np.asarray(a, dtype=np.float64)
    out = np.empty(a.shape, dtype=object)
    for idx, x in np.ndenumerate(a):
        out[idx] = F(float(x))
    return out


def attention_rows(pr, alpha) -> tuple[list, list]:
    """Rows ``vec((x_{i alpha_i} - x_it) z_i^T)`` (row-major W) and their (i, t) labels."""
    X, z = exact(pr.X), exact(pr.z)
    rows, labels = [], []
    for i in range(pr.n):
        for t in range(pr.T):
            if t != alpha[i]:
                diff = X[i, alpha[i]] - X[i, t]
                rows.append([diff[j] * z[i, k] for j in range(pr.d) for k in range(pr.d)])
                labels.append((i, t))
    return rows, labels


def decoder_rows(pr, alpha) -> list:
    """Rows ``y_i x_{i alpha_i}`` of the decoder SVM."""
    X = exact(pr.X)
    return [
        [(1 if pr.y[i] > 0 else -1) * X[i, alpha[i], k] for k in range(pr.d)] for i in range(pr.n)
    ]


def _solve(M: list, b: list) -> list | None:
    """One exact solution of ``M y = b`` (free variables 0), None if inconsistent."""
    m, n = len(M), len(M[0]) if M else 0
    A = [list(M[i]) + [b[i]] for i in range(m)]
    piv, r = [], 0
    for c in range(n):
        p = next((i for i in range(r, m) if A[i][c] != 0), None)
        if p is None:
            continue
        A[r], A[p] = A[p], A[r]
        inv = 1 / A[r][c]
        A[r] = [x * inv for x in A[r]]
        for i in range(m):
            if i != r and A[i][c] != 0:
                f = A[i][c]
                A[i] = [x - f * y for x, y in zip(A[i], A[r])]
        piv.append(c)
        r += 1
    if any(all(x == 0 for x in A[i][:n]) and A[i][n] != 0 for i in range(m)):
        return None
    y = [F(0)] * n
    for i, c in enumerate(piv):
        y[c] = A[i][n]
    return y


def svm2(rows: list) -> list | None:
    """The exact p = 2 SVM optimum w* of ``rows w >= 1``, or None when infeasible."""
    m = len(rows)
    best, best_norm = None, None
    for k in range(1, m + 1):
        for S in itertools.combinations(range(m), k):
            A = [rows[r] for r in S]
            G = [[sum(a * b for a, b in zip(A[i], A[j])) for j in range(k)] for i in range(k)]
            y = _solve(G, [F(1)] * k)
            if y is None:
                continue
            w = [sum(y[i] * A[i][c] for i in range(k)) for c in range(len(rows[0]))]
            if all(sum(a * x for a, x in zip(row, w)) >= 1 for row in rows):
                norm = sum(x * x for x in w)
                if best is None or norm < best_norm:
                    best, best_norm = w, norm
    return best


def scores(pr) -> np.ndarray:
    """Exact ``gamma_it = y_i v^T x_it``."""
    X, v = exact(pr.X), exact(pr.v)
    out = np.empty((pr.n, pr.T), dtype=object)
    for i in range(pr.n):
        for t in range(pr.T):
            out[i, t] = (1 if pr.y[i] > 0 else -1) * sum(X[i, t, k] * v[k] for k in range(pr.d))
    return out


def region_truth(w: list, W0, mu: Fraction, R: Fraction) -> bool:
    """p = 2: ``1 - <W0, w*>/(||W0|| ||w*||) <= mu`` and ``||W0||_2 >= R``, decided exactly."""
    b = [F(float(x)) for x in np.asarray(W0, dtype=np.float64).ravel()]
    nb2, nw2 = sum(x * x for x in b), sum(x * x for x in w)
    if nb2 < R * R:
        return False
    inner = sum(x * y for x, y in zip(b, w))
    c = 1 - mu  # need inner >= c * ||b|| ||w||
    if c <= 0:
        return inner >= 0 or inner * inner <= c * c * nb2 * nw2
    return inner >= 0 and inner * inner >= c * c * nb2 * nw2


# ---------------------------------------------------------------------- interval evaluations (mpmath.iv)
def _iv():
    import mpmath

    mpmath.iv.prec = 400
    return mpmath.iv


def _q(iv, x: Fraction):
    return iv.mpf(x.numerator) / iv.mpf(x.denominator)


def _loss(iv, u, loss: str):
    if loss == "logistic":
        e = iv.exp(-u)
        return iv.log(1 + e), -e / (1 + e), e / ((1 + e) * (1 + e))
    if loss == "exponential":
        e = iv.exp(-u)
        return e, -e, e
    return -u, iv.mpf(-1), iv.mpf(0)


def _terms(iv, pr, W, loss):
    """Per example: softmax, f, l, l' (balls) at the exact iterate W (float64 array (d, d))."""
    X, z, v = exact(pr.X), exact(pr.z), exact(pr.v)
    Wq = exact(W)
    out = []
    for i in range(pr.n):
        s = [
            sum(X[i, t, j] * Wq[j, k] * z[i, k] for j in range(pr.d) for k in range(pr.d))
            for t in range(pr.T)
        ]
        h = [sum(X[i, t, k] * v[k] for k in range(pr.d)) for t in range(pr.T)]
        smax = max(s)
        e = [iv.exp(_q(iv, st - smax)) for st in s]
        tot = sum(e, iv.mpf(0))
        sig = [x / tot for x in e]
        f = sum((a * _q(iv, hh) for a, hh in zip(sig, h)), iv.mpf(0))
        yi = 1 if pr.y[i] > 0 else -1
        l0, l1, l2 = _loss(iv, yi * f, loss)
        out.append((s, h, sig, f, yi, l0, l1, l2))
    return out


def _psi(iv, W, p: Fraction):
    vals = [abs(F(float(x))) for x in np.asarray(W).ravel()]
    pa = _q(iv, p)
    return sum((_q(iv, x) ** pa if x else iv.mpf(0) for x in vals), iv.mpf(0)) / pa


def step_truth(pr, W0, W1, eta: Fraction, p: Fraction, loss: str):
    """``eta D_L(W1, W0) - D_psi(W1, W0)`` as an mpmath interval (the step passes iff it is <= 0)."""
    iv = _iv()
    n = pr.n
    t0, t1 = _terms(iv, pr, W0, loss), _terms(iv, pr, W1, loss)
    L0 = sum((a[5] for a in t0), iv.mpf(0)) / n
    L1 = sum((a[5] for a in t1), iv.mpf(0)) / n
    lin = iv.mpf(0)
    for (s, h, sig, f, yi, l0, l1, l2), (s1, *_rest) in zip(t0, t1):
        lin += (
            l1
            * yi
            * sum(
                (a * (_q(iv, hh) - f) * _q(iv, b - c) for a, hh, b, c in zip(sig, h, s1, s)),
                iv.mpf(0),
            )
        )
    DL = L1 - L0 - lin / n
    pm1 = _q(iv, p - 1)
    grad = []
    for x in np.asarray(W0).ravel():
        x = F(float(x))
        mag = _q(iv, abs(x)) ** pm1 if x else iv.mpf(0)
        grad.append(mag if x >= 0 else -mag)
    dW = [F(float(b)) - F(float(a)) for a, b in zip(np.asarray(W0).ravel(), np.asarray(W1).ravel())]
    Dpsi = (
        _psi(iv, W1, p)
        - _psi(iv, W0, p)
        - sum((g * _q(iv, d) for g, d in zip(grad, dW)), iv.mpf(0))
    )
    return _q(iv, eta) * DL - Dpsi


def curvature(pr, W0, W1, eta: Fraction, p: Fraction, loss: str, tau: Fraction):
    """``g''(tau)`` of ``g = psi - eta L`` along the segment W0 -> W1 at an exact tau (mpmath interval;
    None where psi'' is unbounded: p < 2 and an entry is exactly 0 there)."""
    iv = _iv()
    Wa, Wb = exact(W0).ravel(), exact(W1).ravel()
    Wt = [a + tau * (b - a) for a, b in zip(Wa, Wb)]
    dW = [b - a for a, b in zip(Wa, Wb)]
    pm2 = p - 2
    psi2 = iv.mpf(0)
    for x, dx in zip(Wt, dW):
        if dx == 0:
            continue
        if x == 0 and pm2 < 0:
            return None
        psi2 += (_q(iv, abs(x)) ** _q(iv, pm2) if x else iv.mpf(0 if pm2 > 0 else 1)) * _q(
            iv, dx * dx
        )
    psi2 *= _q(iv, p - 1)
    d = pr.d
    X, z, v = exact(pr.X), exact(pr.z), exact(pr.v)
    L2 = iv.mpf(0)
    for i in range(pr.n):
        s = [
            sum(X[i, t, j] * Wt[j * d + k] * z[i, k] for j in range(d) for k in range(d))
            for t in range(pr.T)
        ]
        ds = [
            sum(X[i, t, j] * dW[j * d + k] * z[i, k] for j in range(d) for k in range(d))
            for t in range(pr.T)
        ]
        h = [sum(X[i, t, k] * v[k] for k in range(d)) for t in range(pr.T)]
        smax = max(s)
        e = [iv.exp(_q(iv, st - smax)) for st in s]
        tot = sum(e, iv.mpf(0))
        sig = [x / tot for x in e]
        f = sum((a * _q(iv, hh) for a, hh in zip(sig, h)), iv.mpf(0))
        Ed = sum((a * _q(iv, dd) for a, dd in zip(sig, ds)), iv.mpf(0))
        C = sum((a * (_q(iv, hh) - f) * _q(iv, dd) for a, hh, dd in zip(sig, h, ds)), iv.mpf(0))
        M = sum(
            (a * (_q(iv, hh) - f) * (_q(iv, dd) - Ed) ** 2 for a, hh, dd in zip(sig, h, ds)),
            iv.mpf(0),
        )
        yi = 1 if pr.y[i] > 0 else -1
        _, l1, l2 = _loss(iv, yi * f, loss)
        L2 += l2 * C * C + l1 * yi * M
    return psi2 - _q(iv, eta) * L2 / pr.n
