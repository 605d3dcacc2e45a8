"""Tests of LpMirrorDescent (docs/theory.md section 2, issue 2 item 3)."""

from __future__ import annotations

import copy
import io
import pickle
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.experiments.optim.helpers import gen, run_steps, simple_steps

import experiments.optim.kernels as kernels_mod
from certify import lp
from certify.errors import MdcertError
from experiments import LpMirrorDescent
from experiments.optim.optimizer import simple_update, mirror_step

PS = ["1.1", "1.3", "1.75", "2", "2.5", "3", "4", "7/3", "21/8", "1.8", "5/4"]
PATHS = {"fast": dict(foreach=False), "foreach": dict(foreach=True)}


# ---------------------------------------------------------------- p = 2 is SGD bit for bit
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("path", ["fast", "foreach", "risky"])
def test_p2_equals_sgd_bitwise(dtype, maximize, path):
    g = gen(1)
    shapes = [(7, 3), (50,), (2, 2, 2)]
    a = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype)) for s in shapes]
    b = [torch.nn.Parameter(x.detach().clone()) for x in a]
    sgd = torch.optim.SGD(a, lr=0.37, maximize=maximize)
    md = LpMirrorDescent(b, lr=0.37, p="2", maximize=maximize, foreach=(path == "foreach"))
    if path == "risky":  # force the compute-check-copy path
        md._abs_bound = lambda param: float("inf")
    for _ in range(4):
        for x, y in zip(a, b):
            grad = torch.randn(x.shape, generator=g, dtype=dtype)
            x.grad, y.grad = grad.clone(), grad.clone()
        sgd.step()
        md.step()
    for x, y in zip(a, b):
        assert torch.equal(x, y)


# ---------------------------------------------------------------- stationarity and paths
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("path", ["fast", "foreach"])
def test_stationarity(p, path):
    W0 = torch.randn(40, generator=gen(2), dtype=torch.float64) * 2
    G = torch.randn(40, generator=gen(3), dtype=torch.float64)
    lr = 0.3
    new = run_steps(W0, [G], p=p, lr=lr, **PATHS[path])
    lhs = lp.mirror_map(new.numpy(), p)
    rhs = lp.mirror_map(W0.numpy(), p) - lr * G.numpy()
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12 * np.abs(rhs).max())


@pytest.mark.parametrize("p", PS + ["1.01", "8", "5/4"])
@pytest.mark.parametrize("path", ["fast", "foreach"])
@pytest.mark.parametrize("flags", [{}, {"maximize": True}, {"normalize_gradient": True}])
def test_fast_equals_simple_float64(p, path, flags, monkeypatch):
    monkeypatch.setattr(kernels_mod, "CHUNK", 16)  # several chunks and a ragged tail
    W0 = torch.randn(53, generator=gen(4), dtype=torch.float64)
    W0[3] = 0.0
    grads = [torch.randn(53, generator=gen(5 + k), dtype=torch.float64) for k in range(3)]
    grads[0][7] = 0.0
    fast = run_steps(W0, grads, p=p, lr=0.05, **PATHS[path], **flags)
    ref = simple_steps(W0, grads, p=p, lr=0.05, **flags)
    np.testing.assert_allclose(fast.numpy(), ref.numpy(), rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("p", ["1.1", "1.75", "3", "4"])
def test_fast_close_to_simple_float32(p):
    W0 = torch.randn(1000, generator=gen(6))
    grads = [torch.randn(1000, generator=gen(7))]
    fast = run_steps(W0, grads, p=p, lr=0.05, dtype=torch.float32)
    ref = simple_steps(W0.double(), [g.double() for g in grads], p=p, lr=0.05)
    # float32 rounding of the two maps (generic exponents via exp2/log2): a few ulps relative
    np.testing.assert_allclose(fast.double().numpy(), ref.numpy(), rtol=2e-5, atol=1e-30)


def test_risky_path_equals_direct():
    W0 = torch.randn(30, generator=gen(8), dtype=torch.float64)
    G = torch.randn(30, generator=gen(9), dtype=torch.float64)
    direct = run_steps(W0, [G], p="7/4", lr=0.1)
    param = torch.nn.Parameter(W0.clone())
    param.grad = G.clone()
    opt = LpMirrorDescent([param], lr=0.1, p="7/4")
    opt._abs_bound = lambda p_: float("inf")
    opt.step()
    assert torch.equal(param.detach(), direct)


def test_bound_refreshed_after_inplace_change():
    param = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    opt = LpMirrorDescent([param], lr=1.0, p="1.5")
    param.grad = torch.ones(4, dtype=torch.float64) * 1e-3
    opt.step()
    with torch.no_grad():
        param.fill_(1e200)  # bumps the version counter: the cached bound must not be trusted
    param.grad = -torch.full((4,), 1e200, dtype=torch.float64)
    with pytest.raises(FloatingPointError, match="overflowed"):
        opt.step()
    assert torch.all(param.detach() == 1e200)


# ---------------------------------------------------------------- optimizer contract
def test_param_groups_with_own_p():
    a = torch.nn.Parameter(torch.randn(6, generator=gen(10), dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(6, generator=gen(11), dtype=torch.float64))
    ga, gb = (
        torch.randn(6, generator=gen(12), dtype=torch.float64),
        torch.randn(6, generator=gen(13), dtype=torch.float64),
    )
    opt = LpMirrorDescent(
        [{"params": [a]}, {"params": [b], "p": "3", "lr": 0.2}], lr=0.1, p=Fraction(7, 4)
    )
    assert [g["p_exact"] for g in opt.param_groups] == ["7/4", "3/1"]
    a0, b0 = a.detach().clone(), b.detach().clone()
    a.grad, b.grad = ga, gb
    opt.step()
    torch.testing.assert_close(
        a.detach(), simple_update(a0, ga, 0.1, Fraction(7, 4), False, False), rtol=1e-12, atol=0
    )
    torch.testing.assert_close(
        b.detach(), simple_update(b0, gb, 0.2, Fraction(3), False, False), rtol=1e-12, atol=0
    )


def test_state_dict_round_trip():
    g = gen(14)
    W0 = torch.randn(10, generator=g, dtype=torch.float64)
    grads = [torch.randn(10, generator=g, dtype=torch.float64) for _ in range(4)]
    a = torch.nn.Parameter(W0.clone())
    opt = LpMirrorDescent([a], lr=0.1, p="1.75", normalize_gradient=True)
    for grad in grads[:2]:
        a.grad = grad.clone()
        opt.step()
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    b = torch.nn.Parameter(a.detach().clone())
    opt2 = LpMirrorDescent([b], lr=1.0, p="3")
    buf.seek(0)
    opt2.load_state_dict(torch.load(buf))
    assert opt2.state[b]["step"] == 2
    assert (
        opt2.param_groups[0]["p_exact"] == "7/4"
        and opt2.param_groups[0]["normalize_gradient"] is True
    )
    for grad in grads[2:]:
        a.grad, b.grad = grad.clone(), grad.clone()
        opt.step()
        opt2.step()
    assert torch.equal(a, b)
    assert opt.state[a]["step"] == 4


def test_pickle_and_old_state_fill_defaults():
    a = torch.nn.Parameter(torch.ones(3))
    opt = LpMirrorDescent([a], lr=0.1, p="3")
    state = opt.__getstate__()
    for group in state["param_groups"]:
        del group["normalize_gradient"], group["p_exact"]
    fresh = LpMirrorDescent.__new__(LpMirrorDescent)
    fresh.__setstate__(state)
    assert (
        fresh.param_groups[0]["normalize_gradient"] is False
        and fresh.param_groups[0]["p_exact"] == "3/1"
    )
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["p"] == "3"
    copy.deepcopy(opt)


def test_closure_runs_with_grad_and_returns_loss():
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    opt = LpMirrorDescent([w], lr=0.1, p="3")
    calls = []

    def closure():
        calls.append(torch.is_grad_enabled())
        opt.zero_grad()
        loss = (w**2).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert calls == [True] and loss.item() == pytest.approx(5.0)
    assert opt.state[w]["step"] == 1


def test_maximize_is_descent_on_negated_objective():
    W0 = torch.randn(9, generator=gen(15), dtype=torch.float64)
    G = torch.randn(9, generator=gen(16), dtype=torch.float64)
    up = run_steps(W0, [G], p="1.5", lr=0.1, maximize=True)
    down = run_steps(W0, [-G], p="1.5", lr=0.1)
    assert torch.equal(up, down)


def test_zero_grad_and_none_grads_skipped():
    a = torch.nn.Parameter(torch.ones(2))
    b = torch.nn.Parameter(torch.ones(2))
    opt = LpMirrorDescent([a, b], lr=0.1, p="3")
    a.grad = torch.ones(2)
    opt.step()
    assert torch.equal(b.detach(), torch.ones(2)) and b not in opt.state
    opt.zero_grad()
    assert a.grad is None


def test_normalize_gradient_uses_dual_norm_and_zero_gradient_no_step():
    W0 = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    G = torch.tensor([3.0, 0.0, -4.0], dtype=torch.float64)
    q = 7 / 3  # p = 7/4
    Gn = G / (G.abs() ** q).sum() ** (1 / q)
    got = run_steps(W0, [G], p="7/4", lr=0.2, normalize_gradient=True)
    np.testing.assert_allclose(
        got.numpy(), simple_update(W0, Gn, 0.2, Fraction(7, 4), False, False).numpy(), rtol=1e-13
    )
    with pytest.warns(RuntimeWarning, match="exactly zero"):
        assert torch.equal(
            run_steps(
                W0, [torch.zeros(3, dtype=torch.float64)], p="7/4", lr=0.2, normalize_gradient=True
            ),
            W0,
        )


# ---------------------------------------------------------------- saturated losses (issue 20 item 10)
SAT_PATHS = {**PATHS, "nocache": dict(foreach=False, cache_dual=False)}


def _saturated_model(scale: float):
    """The attention model of `synthetic_problem(seed=11)` at ``scale * W0``: the softmax saturates and
    the gradient is subnormal (scale 1880: max |G| about 2e-313) or exactly zero (scale 2000)."""
    from certify import synthetic_problem
    from experiments.model import AttentionModel, problem_tensors

    pr = synthetic_problem(seed=11)
    W0 = torch.randn(pr.d, pr.d, generator=gen(2), dtype=torch.float64) * scale
    return AttentionModel.from_problem(pr, W0=W0), problem_tensors(pr)


@pytest.mark.parametrize("p", ["7/4", "2", "3"])
@pytest.mark.parametrize("path", list(SAT_PATHS))
def test_normalized_steps_on_a_saturated_trajectory(p, path):
    """Finding: with max |G| = 2.2e-310 the normalized step raised "mirror step overflowed ... use a smaller
    lr" (1/||G||_q overflows). The norm is now formed after scaling G by a power of two: each step is the
    step of the same gradient scaled into the normal range, and moves grad psi(W) by lr in the dual norm."""
    model, t = _saturated_model(1880.0)
    lr, q = 0.1, float(Fraction(p) / (Fraction(p) - 1))
    opt = LpMirrorDescent([model.W], lr=lr, p=p, normalize_gradient=True, **SAT_PATHS[path])
    for _ in range(4):
        opt.zero_grad()
        model.loss(t.X, t.y, t.z).backward()
        G, W = model.W.grad.detach().clone(), model.W.detach().clone()
        assert 0 < float(G.abs().max()) < torch.finfo(G.dtype).tiny  # subnormal (about 2e-313)
        opt.step()
        new = model.W.detach()
        ref = simple_update(
            W, G * 2.0**600, lr, Fraction(p), False, True
        )  # same direction, normal range
        torch.testing.assert_close(new, ref, rtol=1e-13, atol=1e-13 * float(W.abs().max()))
        torch.testing.assert_close(
            mirror_step(W, G, lr, p, normalize_gradient=True),
            ref,
            rtol=1e-13,
            atol=1e-13 * float(W.abs().max()),
        )  # the out-of-place reference
        Q = lp.mirror_map(W.numpy(), p)
        dq, qnorm = lp.mirror_map(new.numpy(), p) - Q, (np.abs(Q) ** q).sum() ** (1 / q)
        tol = (
            16 * np.finfo(np.float64).eps * qnorm / lr
        )  # rounding of W and W+, amplified by the map
        assert abs((np.abs(dq) ** q).sum() ** (1 / q) / lr - 1) < tol


@pytest.mark.parametrize("path", list(SAT_PATHS))
def test_exactly_zero_gradient_says_so_and_names_the_scale_free_route(path):
    model, t = _saturated_model(2000.0)
    W = model.W.detach().clone()
    opt = LpMirrorDescent([model.W], lr=0.5, p="7/4", normalize_gradient=True, **SAT_PATHS[path])
    model.loss(t.X, t.y, t.z).backward()
    assert not bool(model.W.grad.any())
    with pytest.warns(
        RuntimeWarning,
        match=r"parameter 0 of param group 0 .* is exactly zero, so a normalized "
        r"step has no direction .*experiments\.paths\.run_paths",
    ):
        opt.step()
    assert torch.allclose(model.W.detach(), W, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(e=st.integers(-1070, 1000), seed=st.integers(0, 2**16))
@example(e=-1060, seed=0)  # the smallest: max |G| about 2^-1060, 14 bits of subnormal
@example(e=-1031, seed=1)
@example(e=1000, seed=2)
@settings(max_examples=40, deadline=None)
def test_normalized_gradient_is_scale_free_across_the_float_range(dtype, e, seed):
    """``G / ||G||_q`` of ``G 2^e`` equals that of G wherever ``G 2^e`` is exact (every entry a few bits,
    so subnormals keep them): one kernel for every path, no under- or overflow at either end."""
    from experiments.optim.kernels import normalized

    info = np.finfo({torch.float32: np.float32, torch.float64: np.float64}[dtype])
    e = max(
        min(e, info.maxexp - 4), info.minexp - info.nmant
    )  # |G| <= 7: G 2^e exact in this range
    G = torch.randint(-7, 8, (5, 3), generator=gen(seed)).to(dtype)
    G[0, 0] = 5.0  # never all zero
    big = G * 2.0 ** (e // 2) * 2.0 ** (e - e // 2)  # exact: 3-bit integers times a power of two
    for q in (2.0, 7 / 3, 3 / 2, 11.0):
        torch.testing.assert_close(
            normalized(big, q), normalized(G, q), rtol=4 * float(info.eps), atol=0
        )
    assert normalized(torch.zeros(3, dtype=dtype), 2.0) is None


def test_differentiable_step():
    w = torch.tensor([1.0, -0.5], dtype=torch.float64, requires_grad=True)
    param = w.clone()  # non-leaf, as in meta-learning
    param.grad = torch.tensor([0.3, 0.1], dtype=torch.float64)
    opt = LpMirrorDescent([param], lr=0.1, p="3", differentiable=True)
    opt.step()
    param.sum().backward()
    # d W+/d W = (p-1)|W|^{p-2} / ((p-1)|Q|^{(p-2)/(p-1)}) for p = 3: |W| / sqrt|Q|
    W = torch.tensor([1.0, -0.5], dtype=torch.float64)
    Q = W.abs() * W - 0.1 * torch.tensor([0.3, 0.1], dtype=torch.float64)
    torch.testing.assert_close(w.grad, W.abs() / Q.abs().sqrt())


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(lr=-1, p=2), ValueError, r"^Invalid learning rate: -1\b"),
        (dict(lr=0.0, p=2), ValueError, r"^Invalid learning rate: 0.0\b"),
        (dict(lr=float("nan"), p=2), ValueError, r"^Invalid learning rate: nan\b"),
        (dict(lr=float("inf"), p=2), ValueError, r"^Invalid learning rate: inf\b"),
        (dict(lr="x", p=2), ValueError, r"^Invalid learning rate: x\b"),
        (dict(lr=0.1, p=1), ValueError, r"^Invalid p: 1\b"),
        (dict(lr=0.1, p="0.5"), ValueError, r"^Invalid p: 0.5\b"),
        (dict(lr=0.1, p=float("inf")), ValueError, r"^Invalid p: inf\b"),
        (dict(lr=0.1, p=float("nan")), ValueError, r"^Invalid p: nan\b"),
        (dict(lr=0.1, p="abc"), ValueError, r"^Invalid p: abc\b"),
        (dict(lr=0.1, p=True), ValueError, r"^Invalid p: True\b"),
    ],
)
def test_bad_hyperparameters(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        LpMirrorDescent([torch.nn.Parameter(torch.ones(1))], **kwargs)
    assert issubclass(MdcertError, ValueError)


def test_bad_group_p():
    with pytest.raises(ValueError, match=r"^Invalid p: 1/2\b"):
        LpMirrorDescent([{"params": [torch.nn.Parameter(torch.ones(1))], "p": "1/2"}], lr=0.1, p=2)


def test_sparse_gradient_rejected():
    emb = torch.nn.Embedding(5, 3, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="sparse"):
        LpMirrorDescent(emb.parameters(), lr=0.1, p=3).step()


@pytest.mark.parametrize("path", ["fast", "foreach", "simple"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nonfinite_gradient_leaves_everything_unchanged(path, bad):
    a = torch.nn.Parameter(torch.ones(4))
    b = torch.nn.Parameter(
        torch.ones(3, 2).t() if path == "simple" else torch.ones(6)
    )  # simple: non-contiguous
    opt = LpMirrorDescent([a, b], lr=0.1, p="1.75", foreach=(path == "foreach"))
    a.grad = torch.ones(4)
    gb = torch.ones(b.shape)
    gb.view(-1)[2] = bad
    b.grad = gb
    with pytest.raises(
        FloatingPointError, match=r"non-finite gradient in parameter 1 of param group 0.*smaller lr"
    ):
        opt.step()
    assert torch.equal(a.detach(), torch.ones(4)) and torch.all(b.detach() == 1)
    assert a not in opt.state or opt.state[a].get("step", 0) == 0


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
@pytest.mark.parametrize("path", ["fast", "foreach"])
def test_overflow_raises_and_leaves_parameters(p, path):
    a = torch.nn.Parameter(torch.ones(5))
    b = torch.nn.Parameter(torch.full((5,), 1e30))
    opt = LpMirrorDescent(
        [{"params": [a]}, {"params": [b]}], lr=1e10, p=p, foreach=(path == "foreach")
    )
    a.grad = torch.ones(5) * 1e-3
    b.grad = -torch.full((5,), 3e37)
    with pytest.raises(
        FloatingPointError,
        match=r"overflowed torch.float32 in parameter 0 of param group 1.*smaller lr",
    ):
        opt.step()
    assert torch.equal(a.detach(), torch.ones(5)) and torch.all(b.detach() == 1e30)


def test_nonfinite_parameter_reported():
    a = torch.nn.Parameter(torch.tensor([1.0, float("nan")]))
    a.grad = torch.ones(2)
    with pytest.raises(FloatingPointError, match="contains NaN or Inf"):
        LpMirrorDescent([a], lr=0.1, p="3").step()


def test_mirror_step_function():
    W = torch.tensor([1.0, -2.0], dtype=torch.float64)
    G = torch.tensor([0.5, 0.5], dtype=torch.float64)
    out = mirror_step(W, G, 0.1, "3")
    assert torch.equal(W, torch.tensor([1.0, -2.0], dtype=torch.float64))
    np.testing.assert_allclose(
        lp.mirror_map(out.numpy(), 3), lp.mirror_map(W.numpy(), 3) - 0.05, rtol=1e-14
    )
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        mirror_step(W, torch.tensor([float("nan"), 0.0], dtype=torch.float64), 0.1, 3)
    with pytest.raises(FloatingPointError, match="overflowed"):
        mirror_step(W, torch.tensor([-1e308, 0.0], dtype=torch.float64), 10.0, 3)


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(PS), st.floats(1e-3, 1.0), st.integers(0, 2**16))
@example("1.1", 1.0, 0)
def test_property_fast_equals_simple(p, lr, seed):
    W0 = torch.randn(12, generator=gen(seed), dtype=torch.float64) * 3
    G = torch.randn(12, generator=gen(seed + 1), dtype=torch.float64)
    fast = run_steps(W0, [G], p=p, lr=lr)
    ref = simple_steps(W0, [G], p=p, lr=lr)
    np.testing.assert_allclose(fast.numpy(), ref.numpy(), rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("scale", [1e20, 1e-25])
def test_huge_and_tiny_gradients_float32(scale):
    """G.G overflows (exact max used) or underflows (sqrt(tiny) floor) without changing the result."""
    W0 = torch.randn(64, generator=gen(20))
    G = torch.randn(64, generator=gen(21)) * scale
    lr = 1e-22 if scale > 1 else 1e20
    for p in ["1.5", "2", "3"]:
        fast = run_steps(W0, [G], p=p, lr=lr, dtype=torch.float32)
        ref = simple_steps(W0.double(), [G.double()], p=p, lr=lr)
        np.testing.assert_allclose(fast.double().numpy(), ref.numpy(), rtol=1e-5, atol=1e-30)


def test_hooks_and_lr_scheduler():
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = LpMirrorDescent([w], lr=0.5, p="3")
    seen = []
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(o.state[w]["step"]))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for k in range(3):
        w.grad = torch.ones(3, dtype=torch.float64)
        opt.step()
        sched.step()
    assert seen == [1, 2, 3]
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0625)
    Q = 1.0 - 0.5 - 0.25 - 0.125  # grad psi(1) = 1, then three steps with lr 0.5, 0.25, 0.125
    torch.testing.assert_close(
        w.detach(), torch.full((3,), Q**0.5, dtype=torch.float64), rtol=1e-14, atol=0
    )


def test_differentiable_counts_steps():
    param = torch.tensor([1.0], dtype=torch.float64, requires_grad=True).clone()
    param.grad = torch.tensor([0.1], dtype=torch.float64)
    opt = LpMirrorDescent([param], lr=0.1, p="3", differentiable=True)
    opt.step()
    assert opt.state[param]["step"] == 1


@pytest.mark.parametrize("cache_dual", [True, False])
def test_write_through_data_is_never_silently_overflowed(cache_dual):
    """``.data`` writes bypass the version counter. With the dual cache the sampled fingerprint sees a
    whole-tensor write, recomputes the dual and refuses the step with the parameter unchanged; without
    it the in-cache post-check still refuses to return inf."""
    param = torch.nn.Parameter(torch.ones(8))
    opt = LpMirrorDescent([param], lr=1.0, p="1.5", cache_dual=cache_dual)
    param.grad = torch.full((8,), 1e-3)
    opt.step()
    param.data.fill_(
        3e38
    )  # invisible to param._version; the stale bound (about 1) predicts no overflow
    param.grad = -torch.full((8,), 2e18)  # Q = sqrt(3e38) + 2e18, W+ = Q^2 > float32 max
    if cache_dual:
        with pytest.raises(FloatingPointError, match=r"overflowed torch.float32 .*left unchanged"):
            opt.step()
        assert torch.all(param.detach() == 3e38)
    else:
        with pytest.raises(FloatingPointError, match=r"outside autograd \(e.g. through .data\)"):
            opt.step()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_uses_reference_path(dtype):
    W0 = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    G = torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64)
    got = run_steps(W0, [G], p="1.75", lr=0.1, dtype=dtype)
    ref = simple_steps(W0, [G], p="1.75", lr=0.1)
    np.testing.assert_allclose(got.double().numpy(), ref.numpy(), rtol=1e-2)


def _bench_script() -> dict:
    """The namespace of benchmarks/optimizer_step.py (a script, not a module of the package)."""
    import pathlib
    import runpy

    return runpy.run_path(
        str(pathlib.Path(__file__).parents[3] / "benchmarks" / "optimizer_step.py")
    )


def test_benchmark_script_smoke(capsys):
    main = _bench_script()["main"]
    assert main(["--size", "5000", "--repeats", "1", "--simple"]) == 0
    out = capsys.readouterr().out
    assert "Adam fused" in out and "LpMD p=1.75 simple" in out
    # --runs: fresh processes, then each row's ratio spread over them
    args = ["--size", "5000", "--repeats", "1", "--lean", "--ps", "2", "--no-fused", "--runs", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("# process ") == 2 and "over 2 fresh processes" in out
    row = next(line for line in out.splitlines()[::-1] if line.startswith("Adam fused"))
    assert row.split()[-3:] == ["1.00", "/", "1.00"]  # Adam against itself


def test_benchmark_default_row_is_the_users_path():
    """The script's ``default`` rows (the CUDA rows) build ``LpMirrorDescent`` with no path option: on
    the CPU that is the cached-dual path, so one step equals the ``fast`` row's bit for bit."""
    make = _bench_script()["_make"]
    W0 = torch.randn(300, generator=gen(40))
    G = torch.randn(300, generator=gen(41))
    out = []
    for kind in ("LpMD p=1.75 default", "LpMD p=1.75 fast"):
        param = torch.nn.Parameter(W0.clone())
        param.grad = G.clone()
        opt = make(kind, param, 0.1)
        assert opt.param_groups[0]["foreach"] is (None if "default" in kind else False)
        opt.step()
        out.append(param.detach())
    assert torch.equal(out[0], out[1]) and not torch.equal(out[0], W0)


@pytest.mark.gpu
def test_benchmark_script_on_cuda(capsys):
    """On CUDA the script times SGD, fused Adam, each p's default (foreach) path and the compiled
    fused=True step (p != 2), and says which is which."""
    main = _bench_script()["main"]
    assert main(["--device", "cuda", "--size", "5000", "--repeats", "1", "--lean"]) == 0
    out = capsys.readouterr().out
    assert "'fused' rows fused=True (the compiled Triton" in out
    assert "5,000 float32 parameters on cuda" in out
    assert all(f"LpMD p={p} default" in out for p in ("1.1", "1.75", "2", "3"))
    assert "LpMD p=1.75 fused" in out and "LpMD p=2 fused" not in out


@pytest.mark.gpu
@pytest.mark.parametrize("p", ["1.1", "1.75", "2", "3"])
def test_cuda_foreach_path(p):
    """On CUDA the default (foreach) path matches the CPU reference and p = 2 matches SGD bit for bit."""
    dev = torch.device("cuda")
    W0 = torch.randn(257, generator=gen(30), dtype=torch.float64)
    G = torch.randn(257, generator=gen(31), dtype=torch.float64)
    param = torch.nn.Parameter(W0.to(dev))
    param.grad = G.to(dev)
    opt = LpMirrorDescent([param], lr=0.1, p=p)
    assert opt._use_foreach(opt.param_groups[0], [param])
    opt.step()
    ref = simple_steps(W0, [G], p=p, lr=0.1)
    np.testing.assert_allclose(param.detach().cpu().numpy(), ref.numpy(), rtol=1e-11, atol=1e-300)
    if p == "2":
        a = torch.nn.Parameter(W0.to(dev).float())
        b = torch.nn.Parameter(W0.to(dev).float())
        a.grad, b.grad = G.to(dev).float(), G.to(dev).float()
        torch.optim.SGD([a], lr=0.1).step()
        LpMirrorDescent([b], lr=0.1, p=2).step()
        assert torch.equal(a, b)
    bad = torch.nn.Parameter(torch.ones(4, device=dev))
    bad.grad = torch.tensor([1.0, float("nan"), 0.0, 0.0], device=dev)
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        LpMirrorDescent([bad], lr=0.1, p=p).step()
    assert torch.equal(bad.detach().cpu(), torch.ones(4))


# ---------------------------------------------------------------- the finiteness-only gradient check
@pytest.mark.parametrize("p", ["2", "3", "1.75", "1.1"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize(
    "lr", [1e-6, 0.5]
)  # small lr: G.sum() suffices (p = 2, 3); large: G.G and max|G|
def test_nonfinite_gradient_refused_on_every_check_path(p, bad, lr):
    param = torch.nn.Parameter(torch.linspace(-2, 2, 300))
    opt = LpMirrorDescent([param], lr=lr, p=p)
    param.grad = torch.full((300,), 1e-3)
    opt.step()
    before = param.detach().clone()
    g = torch.full((300,), 1e-3)
    g[123] = bad
    param.grad = g
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        opt.step()
    assert torch.equal(param.detach(), before)


@pytest.mark.parametrize("p", ["2", "3"])
def test_huge_cancelling_gradient_with_finite_sum(p):
    """``G.sum()`` is 0 here although entries are near float32 max: the finiteness-only check must still
    bound the step by ``lr * finfo.max`` (no overflow at lr = 1e-3), and p = 2 still equals SGD."""
    g = torch.tensor([3e38, -3e38, 1.0, -1.0] * 4)
    a = torch.nn.Parameter(torch.linspace(-1, 1, 16))
    b = torch.nn.Parameter(a.detach().clone())
    a.grad, b.grad = g.clone(), g.clone()
    LpMirrorDescent([a], lr=1e-3, p=p).step()
    ref = simple_update(b.detach(), g, 1e-3, Fraction(p), False, False)
    assert bool(torch.isfinite(a).all())
    np.testing.assert_allclose(a.detach().numpy(), ref.numpy(), rtol=1e-5)
    if p == "2":
        torch.optim.SGD([b], lr=1e-3).step()
        assert torch.equal(a, b)


@pytest.mark.parametrize("cache_dual", [True, False])
def test_large_and_tiny_float32_parameters_at_p_175(cache_dual):
    """Regression: the forward map |W|^{3/4} once overflowed in an intermediate for |W| > 4.9e25
    (spurious FloatingPointError) and lost digits below 5e-26."""
    W0 = torch.tensor([1e26, -2e27, 1e-30, -3e-35, 1.0])
    G = torch.tensor([1.0, -1.0, 1e-31, 1e-31, 0.5])
    param = torch.nn.Parameter(W0.clone())
    param.grad = G.clone()
    LpMirrorDescent([param], lr=1e-3, p="1.75", cache_dual=cache_dual).step()
    ref = simple_update(W0.double(), G.double(), 1e-3, Fraction(7, 4), False, False)
    np.testing.assert_allclose(param.detach().double().numpy(), ref.numpy(), rtol=1e-5)


@pytest.mark.parametrize("p", ["2", "3", "1.75"])
def test_running_bounds_tighten_over_many_steps(p):
    """With lr * finfo.max near the overflow limit the finiteness-only check is used for a few steps,
    the propagated bound then exceeds the limit and is re-measured; results stay those of the
    reference and p = 2 stays SGD."""
    g = gen(50)
    W0 = torch.randn(64, generator=g)
    grads = [torch.randn(64, generator=g) * 1e-2 for _ in range(40)]
    got = run_steps(W0, grads, p=p, lr=2e-3, dtype=torch.float32)
    ref = simple_steps(W0.double(), [x.double() for x in grads], p=p, lr=2e-3)
    np.testing.assert_allclose(got.double().numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    if p == "2":
        a = torch.nn.Parameter(W0.clone())
        sgd = torch.optim.SGD([a], lr=2e-3)
        for x in grads:
            a.grad = x.clone()
            sgd.step()
        assert torch.equal(a.detach(), got)
