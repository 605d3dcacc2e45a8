"""Tests of the fused p = 2 step (`experiments.optim.sgdfused`): SGD's bits, all or nothing.

The kernel is checked against ``add_`` bit for bit (both dtypes, ragged tails, any thread count),
its refusals (NaN/Inf anywhere, overflow, a full undo log) against the untouched parameter, its
undo against the parameter before the step; then the optimizer with ``fused=True`` at p = 2: the
same bits as SGD, the errors of the checked route, and autograd's version counter. Where the kernel
cannot be built (no AVX-512 target, no C compiler) the kernel tests skip and the optimizer tests
still run (the checked route gives the same bits).
"""

from __future__ import annotations

import math

import pytest
import torch
from tests.experiments.optim.helpers import skip_without_kernel

from experiments import LpMirrorDescent
from experiments.optim import sgdfused
from experiments.optim.fused import bits_of
from experiments.optim.native import NativeUnavailable
from experiments.optim.optimizer import FUSED_MIN_NUMEL
from experiments.optim.sgdfused import LOG_FULL, NOT_FINITE, OK, sgd_kernel

N = FUSED_MIN_NUMEL * 2 + 7
DTYPES = [torch.float32, torch.float64]


def _kernel(dtype):
    try:
        return sgd_kernel(dtype)
    except NativeUnavailable as exc:  # pragma: no cover - depends on the machine
        skip_without_kernel(f"no fused p = 2 kernel here: {exc}")


def _data(n, dtype, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(n, generator=g, dtype=dtype)
    W[:4] = torch.tensor([0.0, -0.0, 1e-30, -3.0], dtype=dtype)
    G = torch.randn(n, generator=g, dtype=dtype) * scale
    return W, G


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [N, 1_000_003, 15])
@pytest.mark.parametrize("coef", [-0.01, 0.003, -0.3, 2.5])
def test_same_bits_as_add_for_every_thread_count(dtype, n, coef, monkeypatch):
    """Steps small against the weights pass (about 1% of the entries logged at 0.01); steps of
    the weights' size absorb too many of them for the log (``n/16``): the pass is undone."""
    kernel = _kernel(dtype)
    W, G = _data(n, dtype, seed=n)
    expect = W.clone().add_(G, alpha=coef)
    top = float(expect.abs().max())
    for threads in (1, 2, 3):
        monkeypatch.setattr(torch, "get_num_threads", lambda t=threads: t)
        w = W.clone()
        log = kernel.log(n)
        status, got = kernel.step(w, G, coef, log)
        if abs(coef) < 0.1 or n < 16:
            assert (status, got) == (OK, top)
            assert torch.equal(bits_of(w), bits_of(expect))
            kernel.undo(w, G, log)  # and the undo gives back W, bit for bit
        else:
            assert status == LOG_FULL and math.isnan(got)
        assert torch.equal(bits_of(w), bits_of(W))


@pytest.mark.parametrize("dtype", DTYPES)
def test_refused_passes_leave_the_parameter_bit_for_bit(dtype):
    kernel = _kernel(dtype)
    W, G = _data(N, dtype, seed=1)
    log = kernel.log(N)
    for where in (0, 15, 16, N // 2, N - 1):  # lanes, vector starts, the scalar tail
        for bad in (math.nan, math.inf, -math.inf):
            w, g = W.clone(), G.clone()
            g[where] = bad
            status, top = kernel.step(w, g, -0.01, log)
            assert status == NOT_FINITE and math.isnan(top)
            assert torch.equal(bits_of(w), bits_of(W))
    w, g = W.clone(), G.clone()
    w[N // 3], g[N // 3] = torch.finfo(dtype).max, -torch.finfo(dtype).max
    before = w.clone()
    assert kernel.step(w, g, -0.01, log)[0] == NOT_FINITE  # max + 0.01 max overflows
    assert torch.equal(bits_of(w), bits_of(before))
    w = W.clone()
    assert kernel.step(w, G, -1e6, log)[0] == LOG_FULL  # every entry absorbed: a full log
    assert torch.equal(bits_of(w), bits_of(W))


def _steps(fused, *, dtype=torch.float32, lr=0.05, steps=3, params=1, **kw):
    g = torch.Generator().manual_seed(3)
    ps = [torch.nn.Parameter(torch.randn(N, generator=g, dtype=dtype)) for _ in range(params)]
    opt = LpMirrorDescent(ps, lr=lr, p=2, fused=fused, **kw)
    for _ in range(steps):
        for param in ps:
            param.grad = torch.randn(N, generator=g, dtype=dtype)
        opt.step()
    return ps, opt


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("flags", [{}, {"maximize": True}, {"lr": 1e4}])
def test_fused_optimizer_gives_sgds_bits(dtype, flags):
    """``lr = 1e4`` absorbs every weight: the log fills, the step takes the checked route."""
    fused, _ = _steps(True, dtype=dtype, **flags)
    lr = flags.get("lr", 0.05)
    g = torch.Generator().manual_seed(3)
    ref = torch.nn.Parameter(torch.randn(N, generator=g, dtype=dtype))
    sgd = torch.optim.SGD([ref], lr=lr, maximize=flags.get("maximize", False))
    for _ in range(3):
        ref.grad = torch.randn(N, generator=g, dtype=dtype)
        sgd.step()
    assert torch.equal(bits_of(fused[0].detach()), bits_of(ref.detach()))


@pytest.mark.parametrize(
    "bad,message",
    [
        (math.nan, "non-finite gradient"),
        (math.inf, "non-finite gradient"),
        ("overflow", "overflowed"),
    ],
)
def test_refused_steps_raise_and_change_nothing(bad, message):
    ps, opt = _steps(True, steps=1, params=2)
    before = [bits_of(p.detach()).clone() for p in ps]
    ps[0].grad = torch.randn(N)
    ps[1].grad = torch.randn(N)
    if bad == "overflow":
        with torch.no_grad():
            ps[1][7] = torch.finfo(torch.float32).max
        before[1] = bits_of(ps[1].detach()).clone()
        ps[1].grad[7] = -torch.finfo(torch.float32).max
        opt.param_groups[0]["lr"] = 1.0
    else:
        ps[1].grad[N - 1] = bad
    with pytest.raises(FloatingPointError, match=message):
        opt.step()
    # parameter 0 had been written before parameter 1 refused: undone bit for bit
    assert all(torch.equal(bits_of(p.detach()), b) for p, b in zip(ps, before))


def test_a_parameter_already_non_finite_is_named():
    """As on the checked route: the pass stops at the NaN and is undone, and the message says the
    parameter itself holds it (not an overflow)."""
    (param,), opt = _steps(True, steps=1)
    with torch.no_grad():
        param[N // 2] = math.nan
    before = bits_of(param.detach()).clone()
    param.grad = torch.randn(N)
    with pytest.raises(FloatingPointError, match="contains NaN or Inf; it was left unchanged"):
        opt.step()
    assert torch.equal(bits_of(param.detach()), before)


def test_a_full_log_then_a_refusal_undoes_the_checked_write():
    ps, opt = _steps(True, steps=1, params=2, lr=0.05)
    before = [bits_of(p.detach()).clone() for p in ps]
    opt.param_groups[0]["lr"] = 1e6  # parameter 0: a full log, the checked route writes it
    ps[0].grad = torch.randn(N)
    ps[1].grad = torch.randn(N)
    ps[1].grad[3] = math.nan
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        opt.step()
    assert all(torch.equal(bits_of(p.detach()), b) for p, b in zip(ps, before))


def test_the_write_is_counted_by_autograd():
    """A backward through a graph that saved the old weights is refused after a fused step, as
    after SGD's in-place ``add_``."""
    (param,), opt = _steps(True, steps=1)
    loss = (param * param).sum()  # saves param
    param.grad = torch.randn(N)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_without_the_kernel_the_checked_route_gives_the_same_bits(monkeypatch):
    def unavailable(dtype):
        raise NativeUnavailable("simulated: no AVX-512")

    fused, _ = _steps(True)
    monkeypatch.setattr(sgdfused, "sgd_kernel", unavailable)
    checked, _ = _steps(True)
    plain, _ = _steps(None)
    assert torch.equal(bits_of(fused[0].detach()), bits_of(checked[0].detach()))
    assert torch.equal(bits_of(plain[0].detach()), bits_of(checked[0].detach()))


def test_bad_arguments_are_refused():
    kernel = _kernel(torch.float32)
    log = kernel.log(100)
    with pytest.raises(ValueError, match="contiguous CPU tensors of one dtype and size"):
        kernel.step(torch.ones(100, dtype=torch.float64), torch.ones(100), -0.1, log)
    with pytest.raises(ValueError, match="contiguous CPU tensors of one dtype and size"):
        kernel.step(torch.ones(101), torch.ones(101), -0.1, log)
    with pytest.raises(NativeUnavailable, match="float32 and float64"):
        sgd_kernel(torch.float16)
