"""Results of the exact data model: optimal token indices and constraint systems (docs/theory.md sections 1, 3).

`OptimalTokens` holds ``argmax_t gamma_it`` over the valid (non-padding) tokens of each example with
its ties; `ConstraintSystem` holds the exact rows ``A w >= 1`` of one SVM and one alpha, as built by
`certify.problem.AttentionProblem` (a padding token, docs/theory.md section 1.3, gives no row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np

from certify.exact import DyadicArray, ldexp_array

__all__ = ["ConstraintSystem", "OptimalTokens"]

T = TypeVar("T")


@dataclass(frozen=True)
class OptimalTokens:
    """Globally optimal token indices ``argmax_t gamma_it`` (docs/theory.md section 1).

    Attributes:
        indices: the smallest maximizing index per example.
        ties: for each example with several maximizers, ``(i, (t1, t2, ...))``; never broken silently.
    """

    indices: tuple[int, ...]
    ties: tuple[tuple[int, tuple[int, ...]], ...]

    @property
    def unique(self) -> bool:
        return not self.ties


@dataclass(frozen=True, eq=False)
class ConstraintSystem:
    """Rows ``a_r`` of ``A w >= 1`` for one SVM and one alpha (docs/theory.md section 3).

    Attention SVM: ``a_(i,t) = vec(left_r right_r^T)`` with ``left = x_{i alpha_i} - x_it``,
    ``right = z_i`` (row-major vec, so ``a^T vec(W) = left^T W right``). Decoder SVM:
    ``a_i = left_i = y_i x_{i alpha_i}`` and ``right`` is None.

    Attributes:
        kind: "attention" or "decoder".
        index: per row, ``(i, t)`` (attention) or ``(i,)`` (decoder).
        left: exact left factors (N x d).
        right: exact right factors (N x d), or None for the decoder SVM.
        d: token dimension; the variable has ``m = d*d`` (attention) or ``d`` entries.
    """

    kind: str
    index: tuple[tuple[int, ...], ...]
    left: DyadicArray
    right: DyadicArray | None
    d: int
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def m(self) -> int:
        return self.d * self.d if self.kind == "attention" else self.d

    @property
    def N(self) -> int:
        return len(self.index)

    def exact_rows(self) -> tuple[np.ndarray, int]:
        """The exact matrix as an object array of Python ints and its binary exponent."""
        left = self.left.as_object()
        if self.right is None:
            return left, self.left.exp
        right = self.right.as_object()
        rows = (left[:, :, None] * right[:, None, :]).reshape(self.N, self.m)
        return rows, self.left.exp + self.right.exp

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """A value derived from this system, ``build()`` on the first request for ``key`` and kept for the
        system's life (the solvers' exact layouts, row factors and norm bounds, shared by every user of
        the system). The system is immutable, so a derived value never goes stale."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def rows(self) -> np.ndarray:
        """Float64 approximation of A (each entry correctly rounded); for solvers only, never evidence."""

        def build() -> np.ndarray:
            ints, exp = self.exact_rows()
            return ldexp_array(ints, exp)  # huge integers (subnormal data) overflow astype

        return self.derived("rows", build)
