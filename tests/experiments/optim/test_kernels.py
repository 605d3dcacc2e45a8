"""Tests of the l_p mirror-step kernels (`experiments.optim.kernels`): power plans and their float32
accuracy (docs/theory.md section 2). The optimizer built on them is tested in test_optim.py."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

import experiments.optim.kernels as kernels_mod
from experiments.optim.kernels import PowPlan, sample_positions


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_pow_plans():
    kinds = {
        e: PowPlan(Fraction(e)).kind
        for e in ["1", "2", "1/2", "3/4", "10", "4/3", "1/10", "13/8", "17"]
    }
    assert kinds == {
        "1": "one",
        "2": "square",
        "1/2": "dyadic",
        "3/4": "dyadic",
        "10": "dyadic",
        "4/3": "generic",
        "1/10": "generic",
        "13/8": "dyadic",
        "17": "dyadic",
    }
    assert PowPlan(Fraction(13, 8)).bits == (1, 3) and PowPlan(Fraction(13, 8)).whole == 1
    assert PowPlan(Fraction(4, 3)).whole == 1 and PowPlan(Fraction(4, 3)).frac == pytest.approx(
        1 / 3
    )


# measured maxima (relative error in float32 eps over |x| in [1e-26, 1e26]): 15.4, 5.9, 11.8, 4.1, 6.6,
# 2.2, 0.7, 2.2, 2.4, 1.2; generic exponents lose digits to exp2's argument e*log2|x| (up to ~30 here)
@pytest.mark.parametrize(
    "e, tol",
    [
        ("4/3", 20),
        ("1/10", 8),
        ("7/3", 16),
        ("10", 6),
        ("17", 8),
        ("3/4", 3),
        ("1/2", 1),
        ("13/8", 3),
        ("5/16", 3),
        ("3/2", 2),
    ],
)
def test_signed_pow_float32_against_float64(e, tol):
    """Every plan stays within a few float32 eps of the float64 power over 52 binades (no intermediate
    overflow/underflow: 3/4 as sqrt|x| * sqrt(sqrt|x|), not sqrt(|x| sqrt|x|))."""
    g = gen(40)
    x = (
        torch.empty(20000, dtype=torch.float64).uniform_(-60, 60, generator=g).exp()
        * torch.randn(20000, generator=g, dtype=torch.float64).sign()
    ).float()
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -1.0])
    ev = float(Fraction(e))
    if ev > 1:  # keep the result inside float32
        x = x.clamp(-(1e30 ** (1 / ev)), 1e30 ** (1 / ev))
    out, tmp = torch.empty_like(x), torch.empty_like(x)
    kernels_mod.signed_pow_into(out, x, PowPlan(Fraction(e)), tmp)
    ref = x.double().abs().pow(ev) * x.double().sign()
    assert torch.equal(out[:4].double(), ref[:4])
    fi = torch.finfo(torch.float32)
    big = ref.abs() >= fi.tiny  # normal float32 results: relative error; subnormal ones: absolute
    rel = ((out.double() - ref).abs() / ref.abs())[big] / fi.eps
    assert float(rel.max()) <= tol
    assert float((out.double() - ref).abs()[~big].max()) <= tol * fi.eps * fi.tiny + 2.0**-149


@pytest.mark.parametrize("n", [1, 5, 64, 65, 1000, 10_000_019])
def test_sample_positions_are_64_evenly_spaced_ends_included(n):
    idx = sample_positions(n)
    assert idx.dtype == torch.int64 and idx.numel() == min(n, 64)
    assert int(idx[0]) == 0 and int(idx[-1]) == n - 1
    assert bool((idx[1:] > idx[:-1]).all())  # distinct, increasing
    gaps = (idx[1:] - idx[:-1]).tolist()
    assert not gaps or max(gaps) - min(gaps) <= 1
    assert sample_positions(n) is idx  # computed once per size


def test_p_text_is_the_exact_fraction_and_is_kept():
    from experiments.optim.kernels import p_text

    assert p_text(Fraction(7, 4)) == "7/4" and p_text(Fraction(3)) == "3/1"
    assert p_text(Fraction(7, 4)) is p_text(Fraction(7, 4))
