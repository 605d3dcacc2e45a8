"""The public property-test kit: strategies are valid, the project's optimizer passes, wrong updates are caught."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings

from certify.problem import AttentionProblem
from experiments.optim import mirror
from experiments.optim.optimizer import LpMirrorDescent, mirror_step
from experiments.testing.kit import (
    _safe_bound,
    attention_problems,
    bounded_tensors,
    check_mirror_update,
    exponents,
)

FAST = dict(max_examples=12)


# ---------------------------------------------------------------- strategies
@settings(deadline=None, max_examples=50)
@given(exponents())
def test_exponents_are_exact_and_in_range(p):
    assert isinstance(p, Fraction) and Fraction(101, 100) <= p <= 8


def test_exponents_cover_two_and_near_one():
    seen = set()

    @settings(deadline=None, max_examples=200, database=None)
    @given(exponents())
    def collect(p):
        seen.add(p)

    collect()
    assert Fraction(2) in seen and any(p <= Fraction(11, 10) for p in seen)
    with pytest.raises(ValueError, match="need 1 < min_value"):
        exponents(min_value=1)


@settings(deadline=None, max_examples=40)
@given(exponents(min_value="1.01", max_value=8).flatmap(
    lambda p: bounded_tensors(p=p, dtype=torch.float32, max_abs=1e30).map(lambda t: (p, t))))
def test_bounded_tensors_keep_maps_finite(case):
    p, W = case
    assert W.dtype == torch.float32 and torch.isfinite(W).all()
    assert torch.isfinite(mirror.mirror_map(W, p)).all()
    assert torch.isfinite(mirror.inverse_mirror_map(W, p)).all()


def test_safe_bound_values():
    assert _safe_bound(Fraction(2), torch.float64) == pytest.approx(torch.finfo(torch.float64).max / 4)
    assert _safe_bound(Fraction(3), torch.float32) == pytest.approx(torch.finfo(torch.float32).max ** 0.5 / 4)
    with pytest.raises(ValueError, match="float32 and float64"):
        bounded_tensors(dtype=torch.float16)


@settings(deadline=None, max_examples=20)
@given(attention_problems())
def test_attention_problems_are_valid(problem):
    assert isinstance(problem, AttentionProblem) and problem.T >= 2
    assert set(problem.y.tolist()) <= {-1.0, 1.0}


# ---------------------------------------------------------------- the project's implementations pass
def test_optimizer_class_passes():
    check_mirror_update(LpMirrorDescent, gd_bitwise=True, **FAST)


def test_optimizer_factory_foreach_and_step_function_pass():
    check_mirror_update(lambda params, lr, p: LpMirrorDescent(params, lr=lr, p=p, foreach=True), **FAST)
    check_mirror_update(lambda W, G, lr, p: mirror_step(W, G, lr, p), mirror_map=mirror.mirror_map,
                        inverse_mirror_map=mirror.inverse_mirror_map, **FAST)


def test_single_exponent():
    check_mirror_update(LpMirrorDescent, p="7/4", **FAST)


@pytest.mark.slow
def test_full_default_run():
    check_mirror_update(LpMirrorDescent, gd_bitwise=True)


# ---------------------------------------------------------------- deliberately wrong updates are caught
def _update(W, G, lr, p, *, inv_exp=None, sign=True):
    fwd = float(p - 1)
    inv = float(1 / (p - 1)) if inv_exp is None else inv_exp(p)
    Q = W.abs().pow(fwd) * (W.sign() if sign else 1) - lr * G
    out = Q.abs().pow(inv) * (Q.sign() if sign else 1)
    if not torch.isfinite(out).all():
        raise FloatingPointError("overflow")
    return out


def wrong_exponent(W, G, lr, p):
    return _update(W, G, lr, p, inv_exp=lambda p: float(1 / p))


def no_sign(W, G, lr, p):
    return _update(W, G, lr, p, sign=False)


def clipping(W, G, lr, p):
    fwd, inv = float(p - 1), float(1 / (p - 1))
    Q = W.abs().pow(fwd) * W.sign() - lr * G
    out = Q.abs().pow(inv) * Q.sign()
    fmax = torch.finfo(W.dtype).max
    return torch.nan_to_num(out, nan=0.0, posinf=fmax, neginf=-fmax)


def ascent(W, G, lr, p):
    return _update(W, -G, lr, p)


def in_place(W, G, lr, p):
    new = _update(W, G, lr, p)
    W.copy_(new)
    return new


class HalfWritten(torch.optim.Optimizer):
    """Updates parameters one by one and raises midway: leaves a half-written state."""

    def __init__(self, params, lr, p):
        super().__init__(params, dict(lr=lr, p=p))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for param in group["params"]:
                new = clipping(param, param.grad, group["lr"], group["p"])
                param.copy_(new)
                if not torch.isfinite(param.grad).all() or (new.abs() == torch.finfo(new.dtype).max).any():
                    raise FloatingPointError("overflow detected after writing")


@pytest.mark.parametrize("update, prop, pattern", [
    (wrong_exponent, "stationarity", r"stationarity fails: grad psi\(W\+\) != grad psi\(W\) - lr\*G"),
    (wrong_exponent, "round_trip", r"round trip fails: a zero-gradient step moved W"),
    (no_sign, "stationarity", r"stationarity fails"),
    (clipping, "overflow", r"overflow fails: .* instead of raising FloatingPointError"),
    (ascent, "descent", r"descent fails: L\(W\+\) - L\(W\) = .* > 0"),
    (ascent, "gradient_descent", r"p = 2 is not gradient descent"),
    (in_place, "stationarity", r"modified its input W in place"),
])
def test_wrong_updates_are_caught(update, prop, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_mirror_update(update, properties=(prop,), **FAST)


def test_half_written_optimizer_is_caught():
    with pytest.raises(AssertionError, match="half-written"):
        check_mirror_update(lambda params, lr, p: HalfWritten(params, lr, p), properties=("overflow",), **FAST)


def test_counterexample_is_shrunk():
    """A wrong exponent is reported on a minimal case: one entry, p = 2 (the first pinned exponent)."""
    with pytest.raises(AssertionError) as info:
        check_mirror_update(wrong_exponent, properties=("stationarity",), max_examples=30)
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "p=2," in text and "tensor([" in text


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown properties"):
        check_mirror_update(mirror_step, properties=("speed",))
    with pytest.raises(ValueError, match="kind must be"):
        check_mirror_update(mirror_step, kind="nope")
