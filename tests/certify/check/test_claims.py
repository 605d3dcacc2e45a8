"""Tests for certify.check.claims: the checker's exact products a block of rows at a time equal the
products over all rows at once."""

from __future__ import annotations

import numpy as np
import pytest

import certify.check.claims as claims
from certify.synth import planted_problem


@pytest.mark.parametrize("svm", ["attention", "decoder"])
@pytest.mark.parametrize("rows", [1, 3, 7, 10_000])
def test_blocked_products_equal_the_whole_products(svm, rows, monkeypatch):
    pr = planted_problem(n=6, T=5, d=3, seed=1)
    R = claims.Rows(pr, svm, tuple(int(a) for a in pr.alpha))
    rng = np.random.default_rng(0)
    w = [int(k) for k in rng.integers(-(2**62), 2**62, size=R.m)]
    lam = [int(k) << 100 for k in rng.integers(0, 2**62, size=R.N)]
    Z = (
        (R.L[:, :, None] * R.R[:, None, :]).reshape(R.N, R.m) if R.R is not None else R.L
    )  # the dense exact rows
    monkeypatch.setattr(claims, "_ROWS", rows)
    monkeypatch.setattr(claims, "_GRAM_ROWS", rows)
    assert R.Aw(w) == [int(x) for x in Z.dot(np.array(w, dtype=object))]
    assert R.ATlam(lam) == [int(x) for x in Z.T.dot(np.array(lam, dtype=object))]
    pick = [0, 4, 2, R.N - 1]
    factors = R.gram(pick)
    M = factors[0] if len(factors) == 1 else factors[0] * factors[1]
    assert [[int(x) for x in r] for r in M] == [[int(x) for x in r] for r in Z[pick].dot(Z[pick].T)]


def test_a_certificate_checks_with_blocks_of_two_rows(monkeypatch):
    from certify import certify_svm
    from certify.check import check_certificate

    pr = planted_problem(n=8, T=5, d=3, seed=2)
    cert = certify_svm(pr, "7/4", digits=20)
    monkeypatch.setattr(claims, "_ROWS", 2)  # A w, A^T lam and the inactive rows' norms in blocks
    monkeypatch.setattr(claims, "_GRAM_ROWS", 2)
    res = check_certificate(pr, cert)
    assert cert.status.value == "optimal" and res.ok, res.first_failure
