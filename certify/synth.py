"""Seeded synthetic data of the paper's experiments (arXiv 2410.14581, section 6)."""

from __future__ import annotations

import numpy as np

from certify.errors import MdcertError
from certify.problem import AttentionProblem

__all__ = ["synthetic_problem"]


def _unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    g = rng.standard_normal(shape)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def synthetic_problem(*, n: int = 6, T: int = 8, d: int = 10, seed: int = 0) -> AttentionProblem:
    """Tokens and comparison vectors uniform on the unit sphere, labels uniform in {-1, +1},
    decoder a uniform unit vector. Same seed, same problem (numpy ``default_rng``).

    Args:
        n: number of examples.
        T: tokens per example (>= 2).
        d: token dimension.
        seed: random seed.
    """
    for name, val, low in (("n", n, 1), ("T", T, 2), ("d", d, 1)):
        if not isinstance(val, (int, np.integer)) or val < low:
            raise MdcertError(f"invalid {name}: {val!r}; need an integer >= {low}")
    rng = np.random.default_rng(seed)
    X = _unit(rng, (n, T, d))
    z = _unit(rng, (n, d))
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    v = _unit(rng, (d,))
    return AttentionProblem(X, y, z, v)
