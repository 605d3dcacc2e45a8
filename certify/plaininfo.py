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

import numpy as np

__all__ = ["classification_info", "regression_info", "duplicate_groups"]

#: groups of duplicated points listed in full (the count is always given)
GROUP_LIMIT = 1000


def duplicate_groups(X: np.ndarray, *, limit: int = GROUP_LIMIT) -> tuple[int, list[list[int]]]:
    """Groups of row indices with exactly equal rows (``-0.0`` = ``0.0``): the number of groups and
    the first ``limit`` of them (each sorted, groups ordered by their first index)."""
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64) + 0.0)  # + 0.0 maps -0.0 to 0.0
    if X.shape[0] < 2:
        return 0, []
    keys = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    dup = np.flatnonzero(counts > 1)
    dup = dup[np.argsort(first[dup], kind="stable")]
    groups = [np.flatnonzero(inverse == g).tolist() for g in dup[:limit]]
    return int(dup.size), groups


def _zero_rows(X: np.ndarray) -> np.ndarray:
    return np.flatnonzero(~np.any(X != 0, axis=1))


def _span(values: np.ndarray) -> list[int]:
    return [int(values.min()), int(values.max())] if values.size else [0, 0]


def classification_info(problem) -> dict:
    """Facts of a `certify.classification.ClassificationProblem` (JSON-ready; module docstring)."""
    binary = problem.classes is None
    values = [-1, 1] if binary else list(range(problem.K))
    counts = {str(v): int(np.count_nonzero(problem.y == v)) for v in values}
    n_groups, groups = duplicate_groups(problem.X)
    zero = _zero_rows(problem.X)
    pair = problem.conflicting_pair()
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
    n_groups, groups = duplicate_groups(X)
    clash = next((g for g in groups if np.unique(y[g] + 0.0).size > 1), None)
    if bad_zero.size:
        i = int(bad_zero[0])
        hint = f"inconsistent (proven: row {i} of X is zero and y[{i}] = {y[i]:g})"
    elif clash is not None:
        i, j = clash[0], next(k for k in clash if y[k] != y[clash[0]])
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
