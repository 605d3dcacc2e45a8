"""certify.rows: constraint systems keep their derived values once, behind a public method."""

from __future__ import annotations

import numpy as np

from certify.problem import AttentionProblem

PROB = AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1])


def test_derived_builds_once_per_key():
    cs = PROB.attention_constraints(alpha=[0])
    calls = []

    def build():
        calls.append(1)
        return len(calls)

    assert cs.derived("k", build) == 1 and cs.derived("k", build) == 1 and calls == [1]
    assert cs.derived("other", build) == 2
    assert cs.rows() is cs.rows()  # the float rows are a derived value too


def test_float_rows_round_the_exact_rows():
    cs = PROB.decoder_constraints(alpha=[0])
    ints, exp = cs.exact_rows()
    assert np.array_equal(cs.rows(), np.array([[float(v) * 2.0**exp for v in row] for row in ints]))
