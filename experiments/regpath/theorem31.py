"""The data quantities behind Theorem 31's geometric condition (docs/theory.md section 5), measured
exactly from the certified decoder SVM point: no verdict."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from experiments.regpath.svm_reference import Reference

__all__ = ["theorem31_quantities"]


# ---------------------------------------------------------------------------------------- Theorem 31 numbers
def theorem31_quantities(problem, v_reference: Reference, alpha: Sequence[int]) -> dict:
    """Data quantities behind Theorem 31's geometric condition, measured (no verdict).

    With the certified decoder SVM point ``v_mm`` (exact rationals when certified): the token
    scores ``y_i v_mm^T x_it`` (1 on the decoder's support examples, > 1 off it), per example the
    alpha token's score, the best other token's score and their gap, and the decoder support set.
    Scores are computed exactly (rationals) and rounded to float64 for the report. Only valid tokens
    count (docs/theory.md section 1.3): row i of ``decoder_scores`` has ``lengths[i]`` entries.
    """
    X = problem.X
    n, _, d = X.shape
    lengths = [int(k) for k in problem.valid_lengths]
    if v_reference.exact is not None:
        v = list(v_reference.exact)
    else:
        v = [Fraction(float(x)) for x in v_reference.direction]
    Xq = [
        [[Fraction(float(X[i, t, k])) for k in range(d)] for t in range(lengths[i])]
        for i in range(n)
    ]
    scores = [
        [int(problem.y[i]) * sum(Xq[i][t][k] * v[k] for k in range(d)) for t in range(lengths[i])]
        for i in range(n)
    ]
    per = []
    for i in range(n):
        a = alpha[i]
        others = [scores[i][t] for t in range(lengths[i]) if t != a]
        best_other = max(others)
        per.append(
            {
                "example": i,
                "alpha_token": a,
                "alpha_score": float(scores[i][a]),
                "best_other_score": float(best_other),
                "score_gap": float(scores[i][a] - best_other),
                "alpha_strictly_best": bool(scores[i][a] > best_other),
                "on_decoder_margin": bool(scores[i][a] == 1),
            }
        )
    support = v_reference.info.get("support_tight")
    return {
        "decoder_scores": [[float(s) for s in row] for row in scores],
        "per_example": per,
        "decoder_support_examples": [int(r[0]) for r in support] if support is not None else None,
        "decoder_vector_certified": bool(v_reference.certified),
        "note": "measured quantities; the geometric condition itself is not asserted",
    }
