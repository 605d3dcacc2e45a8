"""Tests of the fused CPU inverse-map kernel (`experiments.optim.fused`) and ``LpMirrorDescent(fused=True)``.

The traced expressions (`cbrt_expr`, `signed_pow_expr`) are plain torch code, so their accuracy is
tested eagerly (no compiler needed): the cube root against exact rational arithmetic, the powers
against float64 (for float32). The compiled kernel is tested where it can be built (one float32
compilation in the default run, about 30 s on 2 cores the first time); without a C++ toolchain those
tests skip with the reason, and the fallback (warn once, eager kernels) is tested by simulation.
"""

from __future__ import annotations

import copy
import math
import warnings
from fractions import Fraction

import pytest
import torch
from tests.experiments.optim.helpers import skip_without_kernel

import experiments.optim.fused as fused_mod
from certify.errors import MdcertError
from experiments import LpMirrorDescent
from experiments.optim.optimizer import FUSED_MIN_NUMEL
from experiments.optim.fused import (
    KernelUnavailable,
    _recipe,
    bits_of,
    cbrt_expr,
    signed_pow_expr,
)

N = FUSED_MIN_NUMEL * 2 + 7  # large enough for the fused path, with a ragged tail


def _spread(n, dtype, lo, hi, seed=0):
    g = torch.Generator().manual_seed(seed)
    mag = torch.exp(
        torch.empty(n, dtype=torch.float64).uniform_(math.log(lo), math.log(hi), generator=g)
    )
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    return (mag * sign).to(dtype)


# ---------------------------------------------------------------- the traced expressions, eagerly
@pytest.mark.parametrize("dtype,k", [(torch.float32, 3), (torch.float64, 3)])
def test_cbrt_is_exact_to_a_few_eps_by_rational_arithmetic(dtype, k):
    """(y(1 - k eps))^3 <= a <= (y(1 + k eps))^3 exactly, over the whole positive range (subnormals too)."""
    finfo = torch.finfo(dtype)
    a = _spread(400, dtype, finfo.smallest_normal * 2.0**-20, finfo.max / 8, seed=1).abs()
    a = torch.cat(
        [
            a,
            torch.tensor(
                [
                    finfo.smallest_normal,
                    2.0**-149 if dtype == torch.float32 else 5e-324,
                    1.0,
                    8.0,
                    27.0,
                    finfo.max / 8,
                ],
                dtype=dtype,
            ),
        ]
    )
    y = cbrt_expr(a)
    eps = Fraction(finfo.eps)
    for ai, yi in zip(a.tolist(), y.tolist()):
        A, Y = Fraction(ai), Fraction(yi)
        assert (Y * (1 - k * eps)) ** 3 <= A <= (Y * (1 + k * eps)) ** 3, (ai, yi)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cbrt_of_zero_and_perfect_cubes(dtype):
    a = torch.tensor([0.0, 1.0, 8.0, 27.0, 64.0, 0.125], dtype=dtype)
    y = cbrt_expr(a)
    assert y[0] == 0 and not torch.isnan(y).any()
    torch.testing.assert_close(
        y,
        torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 0.5], dtype=dtype),
        rtol=4 * torch.finfo(dtype).eps,
        atol=0,
    )


@pytest.mark.parametrize(
    "e,bound",
    [
        ("4/3", 3),
        ("1/3", 3),
        ("2/3", 5),
        ("10/3", 6),
        ("5/3", 5),
        ("1/2", 1),
        ("3/4", 3),
        ("13/8", 4),
        ("2", 1),
        ("10", 6),
        ("1/10", 12),
        ("7/5", 24),
    ],
)
def test_signed_pow_expr_float32_against_float64(e, bound):
    """Error in float32 eps against the float64 power (rounded results that are normal numbers)."""
    exponent = Fraction(e)
    lo, hi = 1e-26, math.exp(min(math.log(1e26), math.log(1e36) / float(exponent)))
    x = _spread(200_000, torch.float32, lo, hi)
    out = signed_pow_expr(x, _recipe(exponent))
    ref = x.double().abs().pow(float(exponent)).copysign(x.double())
    ok = ref.abs() > torch.finfo(torch.float32).smallest_normal
    err = ((out.double() - ref).abs() / ref.abs())[ok].max() / torch.finfo(torch.float32).eps
    assert float(err) <= bound
    z = signed_pow_expr(torch.tensor([0.0, -0.0]), _recipe(exponent))
    assert z.tolist() == [0.0, 0.0] and math.copysign(1, z[1]) == -1.0


def test_recipes():
    assert _recipe(Fraction(4, 3)) == (1, "cbrt", pytest.approx(1 / 3), ())
    assert _recipe(Fraction(2, 3))[:2] == (0, "cbrt2")
    assert _recipe(Fraction(13, 8)) == (1, "roots", 0.625, (1, 3))
    assert _recipe(Fraction(10))[:2] == (10, "integer")
    assert _recipe(Fraction(1, 10))[:2] == (0, "exp2")


# ---------------------------------------------------------------- the compiled kernel
@pytest.fixture(scope="module", params=["auto", "inductor"])
def kernel43(request):
    """The kernel the optimizer uses (``auto``: the streaming C kernel where it builds) and
    inductor's loop, each through the same tests."""
    try:
        return fused_mod.step_kernel(Fraction(4, 3), torch.float32, backend=request.param)
    except KernelUnavailable as exc:  # pragma: no cover - depends on the machine's toolchain
        skip_without_kernel(f"no compiled kernel here: {exc}")


def test_compiled_kernel_matches_the_expression_for_every_size(kernel43):
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    coef, minus_zero = (torch.tensor(c, dtype=torch.float64) for c in (-0.25, -0.0))
    for n in (FUSED_MIN_NUMEL, N, 1_000_003):
        q = _spread(n, torch.float32, 1e-30, 1e20, seed=n)
        q[:4] = torch.tensor([0.0, -0.0, 0.0, -0.0])
        g = _spread(n, torch.float32, 1e-3, 1e3, seed=n + 1)
        g[:4] = 0.0
        qn = q + coef * g
        q_out, w = torch.empty_like(q), torch.empty_like(q)
        top = kernel43(q, q_out, w, g, coef)
        torch.testing.assert_close(q_out, qn, rtol=2.0**-23, atol=0)
        torch.testing.assert_close(
            w, signed_pow_expr(q_out, _recipe(Fraction(4, 3))), rtol=4 * 2.0**-23, atol=1e-44
        )
        assert float(top) == float(w.abs().max())
        # with g = 0 and coef = -0.0 the step is the inverse map, bit for bit (signed zeros too)
        w0, q0 = torch.empty_like(q), torch.empty_like(q)
        kernel43(q_out, q0, w0, torch.zeros_like(g), minus_zero)
        assert torch.equal(bits_of(w0), bits_of(w)) and torch.equal(bits_of(q0), bits_of(q_out))
        assert bits_of(w0)[:4].tolist() == bits_of(torch.tensor([0.0, -0.0, 0.0, -0.0])).tolist()
        for where in (0, n // 2, n - 1):  # NaN or Inf anywhere (the vectorized tail too) shows
            for bad in (math.nan, math.inf):
                g2 = g.clone()
                g2[where] = bad
                top = kernel43(q, torch.empty_like(q), torch.empty_like(q), g2, coef)
                assert not math.isfinite(float(top))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs  # no recompilation


def test_kernel_cache_returns_the_same_function(kernel43):
    backend = "inductor" if isinstance(kernel43, type(_recipe)) else "auto"
    assert fused_mod.step_kernel(Fraction(4, 3), torch.float32, backend=backend) is kernel43


def _steps(fused, *, p="1.75", dtype=torch.float32, n=N, lr=0.05, steps=4, grad_scale=1.0, **kw):
    g = torch.Generator().manual_seed(3)
    param = torch.nn.Parameter(torch.randn(n, generator=g, dtype=dtype))
    opt = LpMirrorDescent([param], lr=lr, p=p, fused=fused, **kw)
    for _ in range(steps):
        param.grad = torch.randn(n, generator=g, dtype=dtype) * grad_scale
        opt.step()
    return param, opt


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"maximize": True},
        {"normalize_gradient": True, "lr": 3.0},
        {"normalize_gradient": True, "lr": 3.0, "grad_scale": 2.0**-140},
    ],
)
def test_fused_optimizer_agrees_with_eager(kernel43, flags):
    """Up to rounding: the compiled dual update may use a fused multiply-add where the eager one does
    not, which moves entries near a cancellation (Q + coef G ~ 0) by an ulp of the terms. Subnormal
    gradients (``grad_scale``, issue 20 item 10) are normalized after a power-of-two scaling in both."""
    fused, fopt = _steps(True, **flags)
    eager, eopt = _steps(False, **flags)
    assert not torch.equal(fused.detach(), _steps(False, steps=0)[0].detach())  # the steps moved it
    torch.testing.assert_close(fused.detach(), eager.detach(), rtol=8 * 2.0**-23, atol=1e-6)
    torch.testing.assert_close(
        fopt.state[fused]["dual"], eopt.state[eager]["dual"], rtol=8 * 2.0**-23, atol=1e-6
    )


def test_fused_state_dict_round_trip_continues_bit_for_bit(kernel43):
    param, opt = _steps(True, steps=2)
    twin = torch.nn.Parameter(param.detach().clone())
    opt2 = LpMirrorDescent([twin], lr=0.05, p="1.75", fused=True)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    g = torch.Generator().manual_seed(9)
    for _ in range(2):
        param.grad = torch.randn(N, generator=g)
        twin.grad = param.grad.clone()
        opt.step()
        opt2.step()
    assert torch.equal(param.detach(), twin.detach())
    assert torch.equal(opt.state[param]["dual"], opt2.state[twin]["dual"])


def test_fused_overflow_refused_with_parameter_and_dual_unchanged(kernel43):
    param, opt = _steps(True, steps=1)
    before, dual = param.detach().clone(), opt.state[param]["dual"].clone()
    param.grad = torch.zeros(N)
    param.grad[5] = -3e38
    with pytest.raises(FloatingPointError, match="overflowed.*smaller lr"):
        opt.step()
    assert torch.equal(param.detach(), before) and torch.equal(opt.state[param]["dual"], dual)
    param.grad = torch.full((N,), float("nan"))
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        opt.step()
    assert torch.equal(param.detach(), before)


# ---------------------------------------------------------------- options, fallback, errors
@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(fused=True, foreach=True), r"fused=True and foreach=True"),
        (dict(fused=True, differentiable=True), r"fused=True does not support differentiable"),
    ],
)
def test_incompatible_options_are_refused(kw, msg):
    with pytest.raises(MdcertError, match=msg):
        LpMirrorDescent([torch.nn.Parameter(torch.ones(3))], lr=0.1, p="1.75", **kw)
    opt = LpMirrorDescent([torch.nn.Parameter(torch.ones(3))], lr=0.1, p="1.75")
    with pytest.raises(MdcertError, match=msg):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(2))], **kw})


def test_unavailable_kernel_warns_once_and_falls_back(monkeypatch):
    calls = []

    def unavailable(exponent, dtype):
        calls.append((exponent, dtype))
        raise KernelUnavailable("simulated: no C++ compiler")

    monkeypatch.setattr(fused_mod, "step_kernel", unavailable)
    with pytest.warns(RuntimeWarning, match="fused=True.*simulated: no C\\+\\+ compiler.*eager"):
        fused, _ = _steps(True, steps=3)
    eager, _ = _steps(False, steps=3)
    assert torch.equal(fused.detach(), eager.detach())
    assert len(calls) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _steps(True, steps=1, n=FUSED_MIN_NUMEL - 1)  # small tensors never ask for a kernel
    assert len(calls) == 3


def test_fused_does_not_apply_to_p2_small_tensors_or_without_the_cache(monkeypatch):
    monkeypatch.setattr(fused_mod, "step_kernel", lambda *a: pytest.fail("kernel requested"))
    a, _ = _steps(True, p="2")
    b, _ = _steps(None, p="2")
    assert torch.equal(a.detach(), b.detach())  # p = 2 stays SGD's add_
    _steps(True, n=100)
    _steps(True, cache_dual=False)


def test_failed_compilation_is_remembered(monkeypatch):
    attempts = []

    def broken(exponent):
        attempts.append(exponent)
        raise RuntimeError("simulated compiler crash\nsecond line")

    monkeypatch.setattr(fused_mod, "_make_kernel", broken)
    monkeypatch.setattr(fused_mod, "_KERNELS", {})
    monkeypatch.setattr(fused_mod, "_FAILED", {})
    for _ in range(2):
        with pytest.raises(KernelUnavailable, match=r"RuntimeError: simulated compiler crash\)$"):
            fused_mod.step_kernel(Fraction(4, 3), torch.float32, backend="inductor")
    assert attempts == [Fraction(4, 3)]
    with pytest.raises(KernelUnavailable, match="float32 and float64, not torch.float16"):
        fused_mod.step_kernel(Fraction(4, 3), torch.float16)


@pytest.mark.slow
@pytest.mark.parametrize(
    "p,dtype",
    [
        ("1.75", torch.float64),
        ("3", torch.float32),
        ("1.3", torch.float32),
        ("2.5", torch.float64),
        ("1.1", torch.float32),
    ],
)
def test_fused_agrees_with_eager_other_exponents(p, dtype):
    try:
        fused_mod.step_kernel(1 / (Fraction(p) - 1), dtype)
    except KernelUnavailable as exc:  # pragma: no cover
        skip_without_kernel(str(exc))
    fused, _ = _steps(True, p=p, dtype=dtype)
    eager, _ = _steps(False, p=p, dtype=dtype)
    eps = torch.finfo(dtype).eps * max(
        1.0, float(1 / (Fraction(p) - 1))
    )  # W = Q^e amplifies Q's rounding e-fold
    torch.testing.assert_close(fused.detach(), eager.detach(), rtol=16 * eps, atol=16 * eps)


def test_one_compilation_serves_the_optimizer_and_direct_calls(kernel43, monkeypatch):
    """Kernel calls outside and inside ``no_grad`` (the optimizer's step) share one compiled graph,
    and the optimizer's step does run the kernel (one call per step)."""
    calls = []

    def counting(*args):
        calls.append(args)
        return kernel43(*args)

    real = fused_mod.step_kernel
    monkeypatch.setattr(
        fused_mod,
        "step_kernel",
        lambda e, d: counting if (e, d) == (Fraction(4, 3), torch.float32) else real(e, d),
    )
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    _steps(True, steps=2)
    assert len(calls) == 2
    q = torch.ones(N)
    out = torch.empty_like(q)
    kernel43(q, out, torch.empty_like(q), q.clone(), torch.tensor(1.0, dtype=torch.float64))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs
