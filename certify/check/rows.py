"""The checker's own constraint rows (trusted code, part of `certify.check`; docs/theory.md sections 3, 7).

Attention rows ``vec((x_{i alpha_i} - x_it) z_i^T)`` for every valid token ``t != alpha_i`` (example i,
then token t; padding tokens ``t >= lengths[i]`` give no row) and decoder rows ``y_i x_{i alpha_i}``.
The rows of the l_p max-margin program of a classification problem are built from X and y alone, in exact integers, with numpy only (no solver module, not
`ClassificationProblem.constraints`): binary row ``(i,)`` is ``y_i x_i``; multiclass row ``(i, k)``,
for every class ``k != y_i`` in increasing order, is ``vec((e_{y_i} - e_k) x_i^T)`` (row-major K x d:
``x_i`` in block ``y_i``, ``-x_i`` in block k), so that ``a^T vec(W) = (w_{y_i} - w_k)^T x_i``.
"""

from __future__ import annotations

import numpy as np

from certify.problem import token_differences

__all__ = ["attention_rows", "classification_rows"]


def attention_rows(problem, svm: str, alpha) -> tuple:
    """``(index, example, L, R, exp, src)`` of the attention (or, ``svm = "decoder"``, decoder) SVM:
    row labels, the example of each row, exact left factors (object, N x d), exact right factors
    ``z_i`` (attention) or None, the binary exponent (row r is ``vec(L_r R_r^T) 2**exp`` or
    ``L_r 2**exp``) and, for attention, ``(X, ta, tb, e)`` with ``L_r = (X[i, ta_r] - X[i, tb_r])
    2^-e`` (the float data the left factors come from) or None."""
    z = problem.exact("z")
    Zi = z.ints.astype(object)
    a = np.asarray(alpha, dtype=np.int64)
    if svm == "decoder":
        X = problem.exact("X")
        ii = np.arange(problem.n)
        L = (
            X.ints.astype(object)[ii, a]
            * np.where(np.asarray(problem.y) > 0, 1, -1).astype(object)[:, None]
        )
        return [(i,) for i in ii.tolist()], ii, L, None, X.exp, None
    t = np.arange(problem.T)[None, :]
    ii, tt = np.nonzero((t < np.asarray(problem.valid_lengths)[:, None]) & (t != a[:, None]))
    D = token_differences(problem.X, ii, a[ii], tt)  # exact, a block of rows at a time
    return (
        list(zip(ii.tolist(), tt.tolist())),
        ii,
        D.ints if D.ints.dtype == object else D.ints.astype(object),
        Zi[ii],
        D.exp + z.exp,
        (np.asarray(problem.X, dtype=np.float64), a[ii], tt, D.exp),
    )


def classification_rows(problem) -> tuple[list[tuple[int, ...]], np.ndarray, int]:
    """``(index, L, exp)``: the row labels, the exact rows as an N x m object array of Python ints
    and their common binary exponent (the value of row r is ``L[r] * 2**exp``)."""
    X = problem.exact_X()
    Xi = X.ints.astype(object)
    y = [int(v) for v in problem.y]
    n, d = Xi.shape
    if problem.classes is None:
        return [(i,) for i in range(n)], Xi * np.array(y, dtype=object)[:, None], X.exp
    K = int(problem.classes)
    index = [(i, k) for i in range(n) for k in range(K) if k != y[i]]
    L = np.zeros((len(index), K * d), dtype=object)  # Python int 0 entries
    for r, (i, k) in enumerate(index):
        L[r, y[i] * d : (y[i] + 1) * d] = Xi[i]
        L[r, k * d : (k + 1) * d] = -Xi[i]
    return index, L, X.exp
