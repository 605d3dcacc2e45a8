"""Seeded synthetic data of the paper's experiments (arXiv 2410.14581, section 6)."""

from __future__ import annotations

import numpy as np

from certify.errors import MdcertError
from certify.problem import AttentionProblem

__all__ = ["synthetic_problem"]


def _unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    g = rng.standard_normal(shape)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def synthetic_problem(*, n: int = 6, T: int = 8, d: int = 10, seed: int = 0, min_T: int | None = None) -> AttentionProblem:
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
    for name, val, low in (("n", n, 1), ("T", T, 2), ("d", d, 1)):
        if not isinstance(val, (int, np.integer)) or val < low:
            raise MdcertError(f"invalid {name}: {val!r}; need an integer >= {low}")
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
