"""The all-or-nothing guarantee of speculative fused steps (`experiments.optim.dual`, issue 25).

A fused step whose parameter is known to be bit for bit the kernel's inverse map of the cached dual
runs without checking the gradient first; a step that would leave a non-finite parameter or dual is
undone exactly. Here: after such a refusal (NaN / Inf in the gradient, overflow of the dual, overflow
of the power) the parameter, the dual and the step count are bit-identical to before, the next step
continues bit for bit like a twin that never saw the bad gradient, and a refusal in one parameter
undoes the steps already taken on the others. The default run compiles two float32 kernels; the
other exponents and float64 are marked slow.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from tests.experiments.optim.helpers import skip_without_kernel

import experiments.optim.fused as fused_mod
from experiments import LpMirrorDescent
from experiments.optim.fused import KernelUnavailable, bits_of
from experiments.optim.optimizer import FUSED_MIN_NUMEL

N = FUSED_MIN_NUMEL * 2 + 7
_SLOW = pytest.mark.slow
# p: 1.1 (W = Q^10), 1.75 (Q^{4/3}, cube root), 2 (SGD's add_), 3 (square root), 12/7 (Q^{7/5}, exp2)
CASES = [
    ("1.75", torch.float32),
    ("3", torch.float32),
    ("2", torch.float32),
    pytest.param("1.1", torch.float32, marks=_SLOW),
    pytest.param("12/7", torch.float32, marks=_SLOW),
    pytest.param("1.1", torch.float64, marks=_SLOW),
    pytest.param("1.75", torch.float64, marks=_SLOW),
    pytest.param("2", torch.float64, marks=_SLOW),
    pytest.param("3", torch.float64, marks=_SLOW),
    pytest.param("12/7", torch.float64, marks=_SLOW),
]


@pytest.fixture(autouse=True, params=["auto", "inductor"])
def backend(request, monkeypatch):
    """Every test runs with the optimizer's default kernels (``auto``: the streaming C kernel where
    it builds) and again with inductor's loops."""
    if request.param == "inductor":
        real = fused_mod.step_kernel
        monkeypatch.setattr(
            fused_mod, "step_kernel", lambda e, d, **kw: real(e, d, backend="inductor")
        )
    return request.param


def _speculative(opt, param) -> bool:
    """W is recorded as the fused kernel's inverse map of the cached dual (at this thread count,
    or at any for the streaming kernel): the next step skips the gradient check."""
    threads = opt._stamps[param].threads
    return threads is not None and threads in (0, torch.get_num_threads())


def _kernel_or_skip(p, dtype):
    if Fraction(p) == 2:
        return
    try:
        fused_mod.step_kernel(1 / (Fraction(p) - 1), dtype)
    except KernelUnavailable as exc:  # pragma: no cover - depends on the machine's toolchain
        skip_without_kernel(f"no compiled kernel here: {exc}")


def _grads(dtype, seed, count):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(N, generator=g, dtype=dtype) for _ in range(count)]


def _setup(p, dtype, *, params=1, lr=0.05):
    g = torch.Generator().manual_seed(1)
    ps = [torch.nn.Parameter(torch.randn(N, generator=g, dtype=dtype)) for _ in range(params)]
    opt = LpMirrorDescent(ps, lr=lr, p=p, fused=True)
    for k, grads in enumerate(zip(*[_grads(dtype, 10 + i, 2) for i in range(params)])):
        for param, grad in zip(ps, grads):
            param.grad = grad
        opt.step()
    return ps, opt


def _snapshot(ps, opt):
    out = []
    for param in ps:
        state = opt.state[param]
        dual = state.get("dual")
        out.append(
            (
                bits_of(param.detach()).clone(),
                None if dual is None else bits_of(dual).clone(),
                state["step"],
            )
        )
    return out


def _same(a, b):
    return all(
        torch.equal(x[0], y[0])
        and (x[1] is None) == (y[1] is None)
        and (x[1] is None or torch.equal(x[1], y[1]))
        and x[2] == y[2]
        for x, y in zip(a, b)
    )


def _bad_grad(kind, dtype, p):
    info = torch.finfo(dtype)
    grad = _grads(dtype, 99, 1)[0]
    where = [0, N // 2, N - 1]  # a vector's first lane, the middle, the ragged tail
    if kind == "nan":
        grad[where[1]] = math.nan
    elif kind == "inf":
        grad[where[2]] = -math.inf
    elif kind == "dual overflow":  # lr 4 below: coef G = -4 max overflows (Q = -inf)
        grad[where[0]] = info.max
    else:  # the power overflows: |Q| ~ 0.05 max / 2 and W = |Q|^{1/(p-1)} with 1/(p-1) > 1
        grad[where[2]] = -info.max / 2
    return grad


@pytest.mark.parametrize("p,dtype", CASES)
@pytest.mark.parametrize("kind", ["nan", "inf", "dual overflow", "power overflow"])
def test_refused_step_changes_nothing_and_the_run_continues_bit_for_bit(p, dtype, kind):
    _kernel_or_skip(p, dtype)
    if kind == "power overflow" and Fraction(p) >= 2:
        pytest.skip("W = |Q|^{1/(p-1)} does not overflow before Q for p >= 2")
    ps, opt = _setup(p, dtype)
    twin_ps, twin = _setup(p, dtype)
    if Fraction(p) != 2:  # the speculative route applies: W is the kernel's inverse map of Q
        assert _speculative(opt, ps[0])
    before = _snapshot(ps, opt)
    if kind == "dual overflow":
        opt.param_groups[0]["lr"] = 4.0
    ps[0].grad = _bad_grad(kind, dtype, p)
    message = "non-finite gradient" if kind in ("nan", "inf") else "overflowed.*unchanged"
    with pytest.raises(FloatingPointError, match=message):
        opt.step()
    assert _same(_snapshot(ps, opt), before)
    opt.param_groups[0]["lr"] = 0.05
    good = _grads(dtype, 7, 2)
    for grad in good:
        ps[0].grad, twin_ps[0].grad = grad.clone(), grad.clone()
        opt.step()
        twin.step()
    assert _same(_snapshot(ps, opt), _snapshot(twin_ps, twin))


@pytest.mark.parametrize(
    "p,dtype", [("1.75", torch.float32), pytest.param("3", torch.float64, marks=_SLOW)]
)
def test_a_refusal_undoes_the_other_parameters(p, dtype):
    """Three parameters in one step: two fused (the first succeeds, then the second refuses) and one
    at p = 2 (SGD's add_, checked in phase 1): all three are left bit for bit as they were."""
    _kernel_or_skip(p, dtype)
    ps, opt = _setup(p, dtype, params=2)
    extra = torch.nn.Parameter(torch.randn(N, dtype=dtype))
    opt.add_param_group({"params": [extra], "p": 2})
    extra.grad = torch.randn(N, dtype=dtype)
    opt.step()  # p = 2 needs no dual; the others are now speculative
    everything = ps + [extra]
    before = _snapshot(everything, opt)
    ps[0].grad = torch.randn(N, dtype=dtype)
    ps[1].grad = _bad_grad("nan", dtype, p)
    extra.grad = torch.randn(N, dtype=dtype)
    with pytest.raises(FloatingPointError, match="parameter 1 of param group 0"):
        opt.step()
    assert _same(_snapshot(everything, opt), before)


def test_an_outside_change_takes_the_checked_route():
    """After an in-place edit of the parameter the cached dual is recomputed, W is no longer the
    kernel's inverse map of it, and the gradient is checked before anything is written."""
    _kernel_or_skip("1.75", torch.float32)
    ps, opt = _setup("1.75", torch.float32)
    with torch.no_grad():
        ps[0].mul_(0.5)
    before = _snapshot(ps, opt)[0][0]
    ps[0].grad = _bad_grad("nan", torch.float32, "1.75")
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        opt.step()
    assert torch.equal(bits_of(ps[0].detach()), before)
    ps[0].grad = _grads(torch.float32, 5, 1)[0]
    opt.step()
    assert _speculative(opt, ps[0])  # speculative again from here on
