"""Tests of the cached dual (`experiments.optim.dual`, ``state["dual"]``) of LpMirrorDescent (docs/theory.md section 2)."""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest
import torch
from tests.experiments.optim.helpers import gen, run_steps, simple_steps

import experiments.optim.kernels as kernels_mod
from certify import lp
from experiments import LpMirrorDescent
from experiments.optim.optimizer import simple_update
from experiments.testing import check_mirror_update


def _opt(param, p="1.75", **kw):
    return LpMirrorDescent([param], lr=0.05, p=p, **kw)


@pytest.mark.parametrize("p", ["1.1", "1.75", "3", "7/3", "1.5"])
@pytest.mark.parametrize("flags", [{}, {"normalize_gradient": True, "maximize": True}])
def test_cache_and_no_cache_agree_float64(p, flags, monkeypatch):
    monkeypatch.setattr(kernels_mod, "CHUNK", 16)
    W0 = torch.randn(37, generator=gen(30), dtype=torch.float64)
    grads = [torch.randn(37, generator=gen(31 + k), dtype=torch.float64) for k in range(6)]
    cached = run_steps(W0, grads, p=p, lr=0.05, cache_dual=True, **flags)
    direct = run_steps(W0, grads, p=p, lr=0.05, cache_dual=False, **flags)
    ref = simple_steps(W0, grads, p=p, lr=0.05, **flags)
    np.testing.assert_allclose(cached.numpy(), direct.numpy(), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(cached.numpy(), ref.numpy(), rtol=1e-13, atol=1e-300)


def test_cache_holds_the_dual_of_the_parameter():
    param = torch.nn.Parameter(torch.randn(20, generator=gen(32), dtype=torch.float64))
    opt = _opt(param)
    for k in range(3):
        param.grad = torch.randn(20, generator=gen(33 + k), dtype=torch.float64)
        opt.step()
    np.testing.assert_allclose(
        opt.state[param]["dual"].numpy(), lp.mirror_map(param.detach().numpy(), "1.75"), rtol=1e-14
    )
    assert (
        "dual" not in LpMirrorDescent([torch.nn.Parameter(torch.ones(2))], p=2).state
    )  # p = 2: no cache


def _modify_no_grad(param):
    with torch.no_grad():
        param.mul_(-1.5)


def _modify_data_whole(param):
    param.data.copy_(
        param.data * -1.5
    )  # invisible to the version counter; the sampled fingerprint sees it


def _modify_data_rebind(param):
    param.data = param.data * -1.5  # new storage


def _modify_detach(param):
    param.detach().mul_(-1.5)  # shares the version counter


@pytest.mark.parametrize(
    "modify", [_modify_no_grad, _modify_data_whole, _modify_data_rebind, _modify_detach]
)
def test_cache_detects_outside_modification(modify):
    """After any of these writes the step equals a fresh optimizer's step from the modified parameter."""
    W0 = torch.randn(50, generator=gen(34), dtype=torch.float64)
    G1, G2 = (torch.randn(50, generator=gen(35 + k), dtype=torch.float64) for k in range(2))
    param = torch.nn.Parameter(W0.clone())
    opt = _opt(param)
    param.grad = G1.clone()
    opt.step()
    modify(param)
    fresh = torch.nn.Parameter(param.detach().clone())
    param.grad, fresh.grad = G2.clone(), G2.clone()
    opt.step()
    _opt(fresh).step()
    assert torch.equal(param.detach(), fresh.detach())


def test_cache_recomputed_when_p_changes():
    param = torch.nn.Parameter(torch.randn(10, generator=gen(36), dtype=torch.float64))
    opt = _opt(param)
    param.grad = torch.randn(10, generator=gen(37), dtype=torch.float64)
    opt.step()
    opt.param_groups[0]["p"] = "3"
    fresh = torch.nn.Parameter(param.detach().clone())
    fresh.grad = param.grad.clone()
    opt.step()
    _opt(fresh, p="3").step()
    assert torch.equal(param.detach(), fresh.detach())


def test_partial_data_write_is_not_detected_without_cache_dual_false():
    """Documented limit: a write through ``.data`` to entries outside the sampled fingerprint keeps the
    stale dual (the step continues from the optimizer's own iterate); ``cache_dual=False`` follows it."""
    W0 = torch.randn(1000, generator=gen(38), dtype=torch.float64)
    G = torch.randn(1000, generator=gen(39), dtype=torch.float64) * 1e-3
    results = {}
    for cache in (True, False):
        param = torch.nn.Parameter(W0.clone())
        opt = _opt(param, cache_dual=cache)
        param.grad = G.clone()
        opt.step()
        param.data[1] = 7.0  # entry 1 is not among the 64 sampled positions of 1000
        opt.step()
        results[cache] = float(param.detach()[1])
    assert results[False] == pytest.approx(7.0, abs=0.01)
    assert abs(results[True] - 7.0) > 1.0


def test_state_dict_keeps_the_dual_and_load_checks_it():
    g = gen(40)
    W0 = torch.randn(30, generator=g, dtype=torch.float64)
    grads = [torch.randn(30, generator=g, dtype=torch.float64) for _ in range(4)]
    a = torch.nn.Parameter(W0.clone())
    opt = _opt(a)
    for grad in grads[:2]:
        a.grad = grad.clone()
        opt.step()
    sd = opt.state_dict()
    assert torch.equal(sd["state"][0]["dual"], opt.state[a]["dual"])
    # 1) loaded as is: accepted (its inverse map rounds to the parameter), continuation is bitwise
    # 2) dropped: recomputed from the parameter; 3) stale (parameter changed): rejected and recomputed
    dropped = copy.deepcopy(sd)
    del dropped["state"][0]["dual"]
    stale = copy.deepcopy(sd)
    stale["state"][0]["dual"] = stale["state"][0]["dual"] * 2
    outs = []
    for state in (copy.deepcopy(sd), dropped, stale):
        b = torch.nn.Parameter(a.detach().clone())
        opt2 = _opt(b)
        opt2.load_state_dict(state)
        for grad in grads[2:]:
            b.grad = grad.clone()
            opt2.step()
        outs.append(b.detach())
    for grad in grads[2:]:
        a.grad = grad.clone()
        opt.step()
    assert torch.equal(outs[0], a.detach())
    np.testing.assert_allclose(outs[1].numpy(), a.detach().numpy(), rtol=1e-13)
    assert torch.equal(outs[2], outs[1])


@pytest.mark.parametrize("cache_dual", [True, False])
def test_check_mirror_update_kit_passes(cache_dual):

    check_mirror_update(
        lambda params, lr, p: LpMirrorDescent(params, lr=lr, p=p, cache_dual=cache_dual),
        max_examples=5,
        dtypes=(torch.float64,),
    )


def test_failed_step_leaves_parameter_and_usable_cache():
    """Overflow refused with the parameter unchanged; the next (small) step still equals a fresh one."""
    param = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    opt = LpMirrorDescent([param], lr=1.0, p="1.75")
    param.grad = torch.tensor([0.1, 0.1, 0.1])
    opt.step()
    before = param.detach().clone()
    param.grad = torch.tensor([-3e38, 0.0, 0.0])
    with pytest.raises(FloatingPointError, match="overflowed"):
        opt.step()
    assert torch.equal(param.detach(), before)
    fresh = torch.nn.Parameter(before.clone())
    param.grad = fresh.grad = torch.tensor([0.1, -0.2, 0.3])
    opt.step()
    ref = simple_update(before, fresh.grad, 1.0, Fraction(7, 4), False, False)
    np.testing.assert_allclose(param.detach().numpy(), ref.numpy(), rtol=2e-6)
