"""What a classification or regression problem file holds, before any solve (`mdcert info`).

The attention summary is `certify.info`; this module gives the same first look at plain data
(docs/formats.md): sizes, classes, duplicated points, zero points or rows, and a hint whose
"not separable" / "inconsistent" is an exact proof read off the data (docs/theory.md sections 7.2
and 8.3), never a float guess:

- classification: two exactly equal points with different labels (the rows ``y_i x_i`` and
  ``y_j x_j`` sum to 0: a Gordan certificate of two entries), or a zero point (its row ``0 >= 1``
  cannot hold); otherwise "not decided here: mdcert certify decides it";
- regression: a zero row of X with ``y_i != 0``, or two equal rows with different targets, make
  ``X beta = y`` inconsistent; ``D <= N`` is said (the sign-descent theory needs ``D > N``).

Everything is exact comparison of the stored float64 values (``-0.0`` equals ``0.0``). Cost
O(n d) memory and O(n d log n) time (a sort of the rows), never n^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RowGroups", "classification_info", "duplicate_groups", "regression_info"]

#: groups of duplicated points listed in full (the count is always given)
GROUP_LIMIT = 1000


@dataclass(frozen=True)
class RowGroups:
    """Rows grouped by exact equality (``-0.0`` = ``0.0``), from one sort of the rows.

    ``first[g]`` is the first row of group ``g``, ``inverse[i]`` the group of row ``i``; the
    duplicate groups (two rows or more) are counted in full and the first ``limit`` listed.
    """

    first: np.ndarray
    inverse: np.ndarray
    count: int
    listed: list[list[int]]

    @classmethod
    def of(cls, X: np.ndarray, *, limit: int = GROUP_LIMIT) -> RowGroups:
        X = np.ascontiguousarray(np.asarray(X, dtype=np.float64) + 0.0)  # + 0.0: -0.0 -> 0.0
        n = X.shape[0]
        if n == 0 or X.shape[1] == 0:
            zeros = np.zeros(n, dtype=np.int64)
            listed = [list(range(n))] if n > 1 else []
            return cls(np.zeros(min(n, 1), dtype=np.int64), zeros, len(listed), listed[:limit])
        keys = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
        _, first, inverse, counts = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        inverse = inverse.ravel()
        dup = np.flatnonzero(counts > 1)
        dup = dup[np.argsort(first[dup], kind="stable")]
        order = np.argsort(inverse, kind="stable")  # members of each group, ascending
        start = np.concatenate(([0], np.cumsum(counts)[:-1]))
        listed = [order[start[g] : start[g] + counts[g]].tolist() for g in dup[:limit]]
        return cls(first, inverse, int(dup.size), listed)

    def clash(self, values: np.ndarray) -> tuple[int, int] | None:
        """``(i, j)``, i < j, two equal rows whose ``values`` differ (the smallest such ``j``, and
        ``i`` the first row equal to it), or None: over every group, listed or not."""
        if not self.inverse.size:
            return None
        rep = self.first[self.inverse]
        values = np.asarray(values) + 0  # -0.0 == 0.0 compares equal anyway
        bad = np.flatnonzero(values != values[rep])
        return None if not bad.size else (int(rep[bad[0]]), int(bad[0]))


def duplicate_groups(X: np.ndarray, *, limit: int = GROUP_LIMIT) -> tuple[int, list[list[int]]]:
    """Groups of row indices with exactly equal rows (``-0.0`` = ``0.0``): the number of groups and
    the first ``limit`` of them (each sorted, groups ordered by their first index)."""
    groups = RowGroups.of(X, limit=limit)
    return groups.count, groups.listed


def _zero_rows(X: np.ndarray) -> np.ndarray:
    return np.flatnonzero(~np.any(X != 0, axis=1))


def _span(values: np.ndarray) -> list[int]:
    return [int(values.min()), int(values.max())] if values.size else [0, 0]


def classification_info(problem) -> dict:
    """Facts of a `certify.classification.ClassificationProblem` (JSON-ready; module docstring)."""
    binary = problem.classes is None
    values = [-1, 1] if binary else list(range(problem.K))
    counts = {str(v): int(np.count_nonzero(problem.y == v)) for v in values}
    rows = RowGroups.of(problem.X)  # one sort: the duplicate groups and the label clash
    n_groups, groups = rows.count, rows.listed
    zero = _zero_rows(problem.X)
    pair = rows.clash(problem.y)
    if pair is not None:
        i, j = pair
        hint = (
            f"not separable (proven: points {i} and {j} are equal, with labels "
            f"{problem.y[i]:g} and {problem.y[j]:g})"
        )
    elif zero.size:
        hint = f"not separable (proven: point {int(zero[0])} is zero, so its row 0 >= 1 fails)"
    else:
        hint = "not decided here (mdcert certify proves separability or not)"
    return {
        "kind": "classification",
        "type": "binary" if binary else "multiclass",
        "n": problem.n,
        "d": problem.d,
        "K": 2 if binary else problem.K,
        "label_counts": counts,
        "empty_classes": [v for v, c in counts.items() if c == 0],
        "data_hash": problem.data_hash(),
        "rows": problem.N,
        "variables": problem.m,
        "duplicate_groups": n_groups,
        "duplicates": groups,
        "zero_points": zero[:GROUP_LIMIT].tolist(),
        "zero_point_count": int(zero.size),
        "hint": hint,
        "provenance": dict(problem.provenance or {}),
    }


def regression_info(problem) -> dict:
    """Facts of a `certify.regression.problem.RegressionProblem` (JSON-ready; module docstring)."""
    X, y = np.asarray(problem.X, dtype=np.float64), np.asarray(problem.y, dtype=np.float64)
    N, D = X.shape
    zero = _zero_rows(X)
    bad_zero = zero[y[zero] != 0]
    rows = RowGroups.of(X)
    n_groups, groups = rows.count, rows.listed
    clash = rows.clash(y)
    if bad_zero.size:
        i = int(bad_zero[0])
        hint = f"inconsistent (proven: row {i} of X is zero and y[{i}] = {y[i]:g})"
    elif clash is not None:
        i, j = clash
        hint = (
            f"inconsistent (proven: rows {i} and {j} of X are equal, y differs: {y[i]:g}, {y[j]:g})"
        )
    else:
        hint = "not decided here (mdcert interpolate proves consistency or not)"
    return {
        "kind": "regression",
        "N": int(N),
        "D": int(D),
        "overparameterized": bool(D > N),
        "data_hash": problem.data_hash(),
        "zero_targets": int(np.count_nonzero(y == 0)),
        "zero_rows": zero[:GROUP_LIMIT].tolist(),
        "zero_row_count": int(zero.size),
        "duplicate_groups": n_groups,
        "duplicates": groups,
        "nonzeros_per_row": _span(np.count_nonzero(X, axis=1)),
        "hint": hint,
    }
