"""experiments.optim.cudastep: the compiled CUDA step of ``LpMirrorDescent(fused=True)``.

On the CPU: the step function (eager) against the reference update, which parameters qualify, and the
group logic (commit, or the checked path's refusal with nothing written) with the eager function
standing in for the compiled kernel. On CUDA (``gpu``): the compiled kernel itself."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from tests.experiments.optim.helpers import gen, simple_steps, skip_without_kernel

import experiments.optim.cudastep as cudastep
from experiments import LpMirrorDescent
from experiments.optim.kernels import simple_update


@pytest.mark.parametrize("p", ["1.1", "1.75", "3", "4/3"])
@pytest.mark.parametrize("maximize", [False, True])
def test_step_function_is_the_reference_update(p, maximize):
    exact = Fraction(p)
    W = torch.randn(999, generator=gen(1), dtype=torch.float64) * 2
    W[:3] = torch.tensor([0.0, -0.0, 1e-200])
    G = torch.randn(999, generator=gen(2), dtype=torch.float64)
    step = cudastep.StepKernel(exact, torch.float64, "cpu", cudastep.step_function)
    new, ok = step(W, G, 0.05 if maximize else -0.05)
    ref = simple_update(W, G, 0.05, exact, maximize, False)
    assert bool(ok)
    np.testing.assert_allclose(new.numpy(), ref.numpy(), rtol=1e-13, atol=0)
    big = W.clone()
    big[5] = 1e300
    assert not bool(step(big, G, -1e300)[1])  # overflow: flagged


def _group(**kw):
    return {"fused": True, "normalize_gradient": False, "differentiable": False, **kw}


@pytest.mark.parametrize(
    "why, group, make",
    [
        ("a CPU tensor", _group(), lambda: torch.ones(4)),
        ("fused off", _group(fused=False), lambda: torch.ones(4)),
        ("p = 2", _group(), lambda: torch.ones(4)),
        ("normalized", _group(normalize_gradient=True), lambda: torch.ones(4)),
    ],
)
def test_applies_refuses(why, group, make):
    param = torch.nn.Parameter(make())
    param.grad = torch.ones_like(param)
    exact = Fraction(2) if why == "p = 2" else Fraction(7, 4)
    assert not cudastep.applies(group, param, exact, 0.1), why


@pytest.fixture
def eager_kernel(monkeypatch):
    """The eager step function in place of the compiled kernel, and every CPU parameter eligible."""

    def kernel(exact, dtype, device):
        return cudastep.StepKernel(exact, dtype, device, cudastep.step_function)

    monkeypatch.setattr(cudastep, "cuda_step_kernel", kernel)
    monkeypatch.setattr(cudastep, "applies", lambda group, param, exact, lr: bool(group["fused"]))


def _jobs(opt):
    return [
        (gi, pi, g, p, g["lr"], Fraction(g["p_exact"]))
        for gi, g in enumerate(opt.param_groups)
        for pi, p in enumerate(g["params"])
    ]


def test_group_commit_with_a_stand_in_kernel(eager_kernel):
    a = torch.nn.Parameter(torch.randn(50, generator=gen(3), dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(7, 3, generator=gen(4), dtype=torch.float64))
    a.grad = torch.randn(50, generator=gen(5), dtype=torch.float64)
    b.grad = torch.randn(7, 3, generator=gen(6), dtype=torch.float64)
    ref = [simple_steps(t.detach().clone(), [t.grad], p="1.75", lr=0.1) for t in (a, b)]
    opt = LpMirrorDescent([a, b], lr=0.1, p="1.75", fused=True)
    jobs = _jobs(opt)
    chosen, rest = opt._cuda_fused_split(opt.param_groups[0], jobs)
    assert len(chosen) == 2 and rest == []
    commits = opt._cuda_fused_group(chosen)
    for c in commits:
        c()
    for t, r in zip((a, b), ref):
        np.testing.assert_allclose(t.detach().numpy(), r.numpy(), rtol=1e-13)


@pytest.mark.parametrize(
    "bad, match",
    [("nan grad", "non-finite gradient"), ("overflow", "overflowed torch.float64")],
)
def test_group_refusal_writes_nothing(eager_kernel, bad, match):
    a = torch.nn.Parameter(torch.ones(10, dtype=torch.float64))
    b = torch.nn.Parameter(torch.full((10,), 1e200, dtype=torch.float64))
    a.grad = torch.ones(10, dtype=torch.float64)
    b.grad = -torch.ones(10, dtype=torch.float64)
    lr = 0.1
    if bad == "nan grad":
        b.grad[3] = float("nan")
    else:
        lr = 1e300  # Q = |W|^{0.1}... + 1e300: the inverse power 10 overflows
    opt = LpMirrorDescent([a, b], lr=lr, p="1.1", fused=True)
    before = [a.detach().clone(), b.detach().clone()]
    chosen, rest = opt._cuda_fused_split(opt.param_groups[0], _jobs(opt))
    assert len(chosen) == 2 and rest == []
    with pytest.raises(FloatingPointError, match=match):
        opt._cuda_fused_group(chosen)
    assert torch.equal(a.detach(), before[0]) and torch.equal(b.detach(), before[1])


# ------------------------------------------------------------------------------ on CUDA
@pytest.mark.gpu
@pytest.mark.parametrize("dtype, rtol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("p", ["1.1", "1.75", "3"])
def test_cuda_fused_matches_the_reference(p, dtype, rtol):
    dev = torch.device("cuda")
    shapes = [(257,), (1,), (33, 9), (70000,)]
    W0 = [torch.randn(s, generator=gen(10 + i), dtype=torch.float64) for i, s in enumerate(shapes)]
    G = [torch.randn(s, generator=gen(20 + i), dtype=torch.float64) for i, s in enumerate(shapes)]
    params = [torch.nn.Parameter(w.to(dtype).to(dev)) for w in W0]
    params.append(torch.nn.Parameter(W0[2].to(dtype).to(dev).t()))  # non-contiguous: foreach path
    G.append(G[2].t().contiguous())
    W0.append(W0[2].t())
    for prm, g in zip(params, G):
        prm.grad = g.to(dtype).to(dev).reshape(prm.shape)
    opt = LpMirrorDescent(params, lr=0.05, p=p, fused=True)
    chosen, rest = opt._cuda_fused_split(opt.param_groups[0], _jobs(opt))
    assert len(chosen) == 4 and len(rest) == 1  # no warning: the kernel was built
    for _ in range(3):
        opt.step()
    q = float(Fraction(p) - 1)
    for prm, w, g in zip(params, W0, G):
        ref = simple_steps(
            w.to(dtype).double(), [g.to(dtype).double().reshape(w.shape)] * 3, p=p, lr=0.05
        )
        # compared in the dual space (the step is linear there; near-zero duals lose digits in W)
        got, want = (t.abs().pow(q) * t.sign() for t in (prm.detach().cpu().double(), ref))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.gpu
@pytest.mark.parametrize("bad, match", [("nan", "non-finite gradient"), ("overflow", "overflowed")])
def test_cuda_fused_is_all_or_nothing(bad, match):
    dev = torch.device("cuda")
    a = torch.nn.Parameter(torch.ones(70000, device=dev))
    b = torch.nn.Parameter(torch.full((70000,), 100.0, device=dev))
    a.grad = torch.ones(70000, device=dev)
    b.grad = -torch.ones(70000, device=dev)
    lr = 0.1
    if bad == "nan":
        b.grad[123] = float("nan")
    else:
        lr = 1e30  # |Q|^10 overflows float32
    opt = LpMirrorDescent([a, b], lr=lr, p="1.1", fused=True)
    with pytest.raises(FloatingPointError, match=match):
        opt.step()
    assert bool((a == 1).all()) and bool((b == 100).all())


@pytest.mark.gpu
def test_cuda_fused_p2_and_maximize():
    dev = torch.device("cuda")
    W0 = torch.randn(5000, generator=gen(40), device="cpu").to(dev)
    G = torch.randn(5000, generator=gen(41)).to(dev)
    x, y = torch.nn.Parameter(W0.clone()), torch.nn.Parameter(W0.clone())
    x.grad, y.grad = G.clone(), G.clone()
    LpMirrorDescent([x], lr=0.1, p=2, fused=True).step()
    torch.optim.SGD([y], lr=0.1).step()
    assert torch.equal(x, y)  # p = 2 keeps SGD's bits
    u, v = torch.nn.Parameter(W0.clone()), torch.nn.Parameter(W0.clone())
    u.grad, v.grad = G.clone(), -G
    LpMirrorDescent([u], lr=0.1, p=3, fused=True, maximize=True).step()
    LpMirrorDescent([v], lr=0.1, p=3, fused=True).step()
    assert torch.equal(u, v)


def test_the_compiled_kernel_itself_on_the_cpu():
    """The same compiled program (inductor's CPU backend here, Triton on CUDA) passes its probe and
    agrees with the reference update: what CI can check of the real kernel without a GPU."""
    exact = Fraction(7, 4)
    try:
        kernel = cudastep.cuda_step_kernel(exact, torch.float64, torch.device("cpu"))
    except cudastep.KernelUnavailable as exc:  # pragma: no cover - no C++ compiler for inductor
        skip_without_kernel(str(exc))
    W = torch.randn(3000, generator=gen(50), dtype=torch.float64)
    G = torch.randn(3000, generator=gen(51), dtype=torch.float64)
    new, ok = kernel(W, G, -0.1)
    assert bool(ok)
    ref = simple_update(W, G, 0.1, exact, False, False)
    np.testing.assert_allclose(new.numpy(), ref.numpy(), rtol=1e-12, atol=1e-300)
    with pytest.raises(cudastep.KernelUnavailable, match="float32 and float64, not torch.float16"):
        cudastep.cuda_step_kernel(exact, torch.float16, torch.device("cpu"))
