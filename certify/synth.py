"""Seeded synthetic data: the paper's experiments (arXiv 2410.14581, section 6), planted-feasible
instances of the attention SVM (docs/theory.md section 3) for constraint-heavy benchmarks, and
planted-separable or random classification problems (docs/theory.md section 7)."""

from __future__ import annotations

import numpy as np

from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.problem import AttentionProblem

__all__ = ["synthetic_problem", "planted_problem", "classification_problem"]


def _unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    g = rng.standard_normal(shape)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def _sizes(n, T, d) -> None:
    for name, val, low in (("n", n, 1), ("T", T, 2), ("d", d, 1)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < low:
            raise MdcertError(f"invalid {name}: {val!r}; need an integer >= {low}")


def synthetic_problem(
    *, n: int = 6, T: int = 8, d: int = 10, seed: int = 0, min_T: int | None = None
) -> AttentionProblem:
    """Tokens and comparison vectors uniform on the unit sphere, labels uniform in {-1, +1},
    decoder a uniform unit vector. Same seed, same problem (numpy ``default_rng``).

    Args:
        n: number of examples.
        T: tokens per example (>= 2); the maximum length with ``min_T``.
        d: token dimension.
        seed: random seed.
        min_T: variable lengths (docs/theory.md section 1.3): example i keeps its first ``lengths[i]``
            tokens, drawn uniformly from ``min_T..T`` by a second stream (``default_rng([seed, 1])``), and
            the rest is zero padding; the kept tokens are those of the full-length problem of the seed.
    """
    _sizes(n, T, d)
    if min_T is not None and (not isinstance(min_T, (int, np.integer)) or not 2 <= min_T <= T):
        raise MdcertError(f"invalid min_T: {min_T!r}; need an integer in 2..T (T = {T})")
    rng = np.random.default_rng(seed)
    X = _unit(rng, (n, T, d))
    z = _unit(rng, (n, d))
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    v = _unit(rng, (d,))
    if min_T is None:
        return AttentionProblem(X, y, z, v)
    lengths = np.random.default_rng([seed, 1]).integers(min_T, T + 1, size=n)
    X = np.where(np.arange(T)[None, :, None] < lengths[:, None, None], X, 0.0)
    return AttentionProblem(X, y, z, v, lengths=lengths)


def planted_problem(
    *, n: int, T: int, d: int, seed: int = 0, margin: float = 0.25
) -> AttentionProblem:
    """A problem whose attention SVM at its globally optimal tokens is feasible by construction.

    Start from `synthetic_problem` data and a planted ``W* = G / ||G||_F * sqrt(d)`` (G Gaussian).
    In each example the token ``alpha_i`` with the largest planted score ``x_it^T W* z_i`` is moved
    (1) along ``y_i v`` until its token score ``y_i v^T x`` leads every other token's by 0.1, so
    alpha is the globally optimal (and unique) choice, then (2) along the part of ``W* z_i``
    orthogonal to v (token scores unchanged) until ``(x_{i alpha_i} - x_it)^T W* z_i >= margin``
    for every t. Hence ``W*/margin`` satisfies every constraint (``A w >= 1``), and the returned
    problem stores ``alpha``. Same seed, same problem.

    Args:
        n, T, d: sizes (T >= 2; d >= 2 so that W* z has a part orthogonal to v).
        seed: random seed.
        margin: planted margin, > 0.
    """
    _sizes(n, T, d)
    if d < 2:
        raise MdcertError(f"invalid d: {d!r}; a planted problem needs d >= 2")
    if not (isinstance(margin, (int, float)) and not isinstance(margin, bool) and 0 < margin < 1e6):
        raise MdcertError(f"invalid margin: {margin!r}; need a number in (0, 1e6)")
    base = synthetic_problem(n=n, T=T, d=d, seed=seed)
    rng = np.random.default_rng([seed, 1])
    G = rng.standard_normal((d, d))
    Ws = G / np.linalg.norm(G) * np.sqrt(d)
    X, y, z, v = base.X.copy(), base.y, base.z, base.v
    Wz = z @ Ws.T  # (n, d): W* z_i
    alpha = np.argmax(np.einsum("ntd,nd->nt", X, Wz), axis=1)
    rows = np.arange(n)
    gamma = y[:, None] * (X @ v)  # token scores
    others = np.where(np.arange(T)[None, :] == alpha[:, None], -np.inf, gamma)
    lift = np.maximum(others.max(axis=1) + 0.1 - gamma[rows, alpha], 0.0)
    X[rows, alpha] += (lift * y)[:, None] * v[None, :]
    u = Wz - (Wz @ v)[:, None] * v[None, :]  # part of W* z_i orthogonal to v
    s = np.einsum("ntd,nd->nt", X, Wz)
    gap = s[rows, alpha][:, None] - s
    gap[rows, alpha] = np.inf
    need = np.maximum(margin - gap.min(axis=1), 0.0) * 1.01 + 1e-3 * margin
    unorm2 = np.einsum("nd,nd->n", u, u)
    X[rows, alpha] += (need / np.maximum(unorm2, 1e-300))[:, None] * u  # raises s_alpha by `need`
    return AttentionProblem(X, y, z, v, alpha=alpha)


#: classification points are rounded to multiples of 2**-GRID_BITS (short exact integers)
GRID_BITS = 16


def classification_problem(
    *,
    n: int,
    d: int,
    classes: int | None = None,
    separable: bool = True,
    seed: int = 0,
    gap: float = 0.25,
) -> ClassificationProblem:
    """A seeded classification problem (docs/theory.md section 7): points ``N(0, I/d)`` rounded to
    multiples of ``2**-GRID_BITS`` (so their exact integers are short).

    Separable (planted): a Gaussian ``w*`` (binary) or ``W*`` (K x d, multiclass) labels each point
    by ``sign(x^T w*)`` or ``argmax_k (W* x)_k``, and only points whose planted margin (``|x^T w*|``,
    or the gap between the two best classes) is at least ``gap`` times its standard deviation are
    kept (drawn until n are kept): far above the rounding, so ``w*`` separates the returned points.
    Random (``separable=False``): labels uniform, independent of the points (for n well above
    d K, not separable). Same seed, same problem.

    Args:
        n, d: examples and features (>= 1).
        classes: None (binary, labels -1/+1) or K >= 2 (labels 0..K-1).
        separable: planted separable (True) or random labels (False).
        seed: random seed.
        gap: kept planted margin in standard deviations, in (0, 2].
    """
    for name, val in (("n", n), ("d", d)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise MdcertError(f"invalid {name}: {val!r}; need an integer >= 1")
    if classes is not None and (
        isinstance(classes, bool)
        or not isinstance(classes, (int, np.integer))
        or not 2 <= classes <= n
    ):
        raise MdcertError(
            f"invalid classes: {classes!r}; need an integer K with 2 <= K <= n (every class an example)"
        )
    if not (isinstance(gap, (int, float)) and not isinstance(gap, bool) and 0 < gap <= 2):
        raise MdcertError(f"invalid gap: {gap!r}; need a number in (0, 2]")
    if classes is None and n < 2:
        raise MdcertError(
            f"invalid n: {n}; a binary problem needs n >= 2 (an example of each label)"
        )
    rng = np.random.default_rng(seed)
    K = 2 if classes is None else int(classes)

    def draw(k: int) -> np.ndarray:
        return np.round(rng.standard_normal((k, d)) / np.sqrt(d) * 2.0**GRID_BITS) / 2.0**GRID_BITS

    if not separable:
        X = draw(n)
        y = rng.integers(0, K, size=n)
        y[rng.permutation(n)[:K]] = np.arange(K)  # every class has an example
        return ClassificationProblem(
            X,
            np.where(y > 0, 1.0, -1.0) if classes is None else y.astype(np.float64),
            classes=classes,
        )
    W = rng.standard_normal((1 if classes is None else K, d))
    if classes is not None:  # centred: for K <= d + 1 every class owns a cone of points
        W -= W.mean(axis=0)
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    kept_X, kept_y, have = [], [], 0
    for _ in range(1000):
        X = draw(max(2 * (n - have), 16))
        S = X @ W.T  # standard deviation of each score: 1/sqrt(d)
        if classes is None:
            margin, y = np.abs(S[:, 0]), np.where(S[:, 0] > 0, 1.0, -1.0)
        else:
            top2 = np.sort(S, axis=1)[:, -2:]
            margin, y = top2[:, 1] - top2[:, 0], np.argmax(S, axis=1).astype(np.float64)
        ok = margin >= gap / np.sqrt(d)
        kept_X.append(X[ok])
        kept_y.append(y[ok])
        have += int(ok.sum())
        if have >= n:
            break
    X, y = np.concatenate(kept_X)[:n], np.concatenate(kept_y)[:n]
    if classes is None and len(np.unique(y)) < 2 or classes is not None and len(np.unique(y)) < K:
        raise MdcertError(
            f"the planted labels of n = {n} points miss a class; draw more points (a larger n)"
        )
    return ClassificationProblem(X, y, classes=classes)
