"""Multi-parameter properties of an optimizer (docs/theory.md section 2), as hypothesis tests (see
`experiments.testing.properties` for the single-tensor ones and the conventions).

    param_groups   two groups with different p and lr: every parameter moves by its own group's step
    grad_none      a parameter whose ``.grad`` is None is skipped (unchanged, no crash)
    closure        ``step(closure)`` runs the closure once with grad enabled, returns its loss and uses
                   the gradient it computed
    normalization  (when declared) the gradient is divided by the declared norm, over all tensors of a
                   group ("global") or per tensor ("per_tensor"); the diagnosis says what was used
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from experiments.testing.properties import GRAD_EXPONENTS, LRS, Context, resolvable, user_call
from experiments.testing.reference import (
    Expectation,
    diagnose_scales,
    dual_mismatch,
    expected_duals,
    fmt,
    to_np,
)
from experiments.testing.strategies import bounded_tensors, exponents, p_text, safe_bound

__all__ = ["GROUPS", "make_param_groups", "make_grad_none", "make_closure", "make_normalization"]

_SHAPES = hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3)


def _tensors(ctx: Context, count: int, ps: Sequence[Fraction], *, scaled: bool = False):
    """``count`` (W, G) pairs of independent shapes whose mirror steps are finite and normal for every p in
    ``ps``; under a declared normalization every G is non-zero (its normalized step is defined) and
    resolvable in the dtype."""
    b = min(4.0, safe_bound(min(ps), ctx.dtype))
    exps = st.sampled_from(GRAD_EXPONENTS[ctx.dtype]) if scaled else st.just(0)
    pair = _SHAPES.flatmap(
        lambda s: st.tuples(
            bounded_tensors(s, p=max(ps), dtype=ctx.dtype, max_abs=b),
            bounded_tensors(s, dtype=ctx.dtype, max_abs=b),
            exps,
        )
    )
    return (
        st.lists(pair, min_size=count, max_size=count)
        .map(lambda xs: [(ctx.tensor(W), ctx.tensor(G * 10.0**-e)) for W, G, e in xs])
        .filter(
            lambda xs: (
                not ctx.expect.normalize
                or all(bool((G != 0).any()) and resolvable(ctx, G) for _, G in xs)
            )
        )
    )


def _params(pairs, *, grads: bool = True) -> list[torch.nn.Parameter]:
    out = []
    for W, G in pairs:
        prm = torch.nn.Parameter(W.detach().clone())
        prm.grad = G.detach().clone() if grads else None
        out.append(prm)
    return out


def _compare(
    ctx: Context, what: str, pairs, news, lr: float, p: Fraction, label: str, exp: Expectation
) -> None:
    Ws, Gs, Ns = (
        [to_np(W) for W, _ in pairs],
        [to_np(G) for _, G in pairs],
        [to_np(n) for n in news],
    )
    expected, scales = expected_duals(Ws, Gs, lr, p, exp)
    for i, (W, N, e, s) in enumerate(zip(Ws, Ns, expected, scales)):
        if not np.all(np.isfinite(N)):
            raise AssertionError(
                f"{what}: {label} parameter {i} became non-finite {fmt(N)} (p={p_text(p)}, lr={lr})"
            )
        bad = dual_mismatch(W, N, e, s, p, exp.rtol, tiny=ctx.tiny)
        if bad.any():
            raise AssertionError(
                f"{what} fails: {label} parameter {i} (p={p_text(p)}, lr={lr}, {ctx.dtype}) moved to "
                f"{fmt(N[bad])}, expected grad psi(W+) = {fmt(e[bad])}; "
                f"{diagnose_scales(Ws, Ns, Gs, lr, p, rtol=exp.rtol, eps=ctx.eps)}"
            )


def _step(ctx: Context, what: str, opt, closure=None):
    return user_call(what, opt.step) if closure is None else user_call(what, opt.step, closure)


def make_param_groups(ctx: Context, ps):
    lrs = st.lists(st.sampled_from(LRS), min_size=2, max_size=2, unique=True)

    @given(
        st.tuples(ps, exponents(), lrs).flatmap(
            lambda t: st.tuples(st.just(t), _tensors(ctx, 3, t[:2]))
        )
    )
    def param_groups(case):
        (p0, p1, (lr0, lr1)), pairs = case
        assume(p0 != p1)
        g0, g1 = _params(pairs[:2]), _params(pairs[2:])
        opt = ctx.adapter.optimizer(
            [{"params": g0, "lr": lr0, "p": p0}, {"params": g1, "lr": lr1, "p": p1}], lr0, p0
        )
        _step(ctx, "param_groups", opt)
        _compare(
            ctx, "param_groups", pairs[:2], [q.detach() for q in g0], lr0, p0, "group 0", ctx.expect
        )
        try:
            _compare(
                ctx,
                "param_groups",
                pairs[2:],
                [q.detach() for q in g1],
                lr1,
                p1,
                "group 1",
                ctx.expect,
            )
        except AssertionError as exc:
            W, G, N = to_np(pairs[2][0]), to_np(pairs[2][1]), to_np(g1[0].detach())
            (e1,), (s1,) = expected_duals([W], [G], lr1, p1, ctx.expect)
            wrong = dual_mismatch(
                W, N, e1, s1, p1, ctx.expect.rtol, tiny=ctx.tiny
            )  # where the truth fails
            found, weak = [], []
            for pp, ll, why in (
                (p0, lr1, "its p is ignored (the first group's or the constructor's p was used)"),
                (p1, lr0, "its lr is ignored (the first group's or the constructor's lr was used)"),
                (p0, lr0, "its p and lr are both ignored"),
            ):
                (e,), (s,) = expected_duals([W], [G], ll, pp, ctx.expect)
                with np.errstate(over="ignore", under="ignore"):
                    resolved = np.abs(e) ** float(1 / (pp - 1)) >= ctx.tiny
                # an explanation must fit every entry (underflow exempt, as for the truth); it is
                # shown by an entry where the truth fails and the candidate's value is resolved. One
                # whose values underflow wherever the truth fails is only consistent: said so
                if (
                    np.all(np.isfinite(N))
                    and wrong.any()
                    and not dual_mismatch(W, N, e, s, pp, ctx.expect.rtol, tiny=ctx.tiny).any()
                ):
                    (found if resolved[wrong].any() else weak).append(
                        f"p={p_text(pp)}, lr={ll}: {why}"
                    )
            named = found or weak
            if named:  # several candidates can fit one small example: all are named, none is chosen
                raise AssertionError(
                    f"param_groups fails: group 1 (p={p_text(p1)}, lr={lr1}) was updated with "
                    + (
                        named[0]
                        if len(named) == 1
                        else "one of: "
                        + "; or ".join(named)
                        + " (this example cannot tell them apart)"
                    )
                    + (
                        ""
                        if found
                        else " (consistent with every entry, though its values underflow to 0 "
                        "wherever the expected ones differ: this example cannot confirm it)"
                    )
                ) from None
            raise exc

    return param_groups


def make_grad_none(ctx: Context, ps):
    @given(
        st.tuples(ps, st.sampled_from(LRS)).flatmap(
            lambda t: st.tuples(st.just(t), _tensors(ctx, 2, t[:1]))
        )
    )
    def grad_none(case):
        (p, lr), pairs = case
        with_grad, without = _params(pairs[:1]), _params(pairs[1:], grads=False)
        opt = ctx.adapter.optimizer([{"params": with_grad + without, "lr": lr, "p": p}], lr, p)
        try:
            opt.step()
        except Exception as exc:  # noqa: BLE001 - the finding
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise AssertionError(
                f"grad_none fails: step() raised {type(exc).__name__}: {first}"
                f" on a group with a parameter whose .grad is None (p={p_text(p)}, lr={lr}); such "
                f"parameters must be skipped"
            ) from None
        assert torch.equal(without[0].detach(), pairs[1][0]), (
            f"grad_none fails: a parameter whose .grad is None moved (p={p_text(p)}, lr={lr})"
        )
        _compare(ctx, "grad_none", pairs[:1], [with_grad[0].detach()], lr, p, "the", ctx.expect)

    return grad_none


def make_closure(ctx: Context, ps):
    @given(
        st.tuples(ps, st.sampled_from(LRS)).flatmap(
            lambda t: st.tuples(st.just(t), _tensors(ctx, 1, t[:1]))
        )
    )
    def closure(case):
        (p, lr), pairs = case
        W, A = pairs[0]
        if ctx.expect.normalize:
            assume(bool((W != A).any()))
        prm = _params([(W, torch.zeros_like(W))], grads=False)[0]
        opt = ctx.adapter.optimizer([{"params": [prm], "lr": lr, "p": p}], lr, p)
        calls = []

        def loss_fn():
            calls.append(torch.is_grad_enabled())
            opt.zero_grad()
            loss = 0.5 * ((prm - A) ** 2).sum()
            loss.backward()
            return loss

        try:
            out = opt.step(loss_fn)
        except TypeError as exc:
            raise AssertionError(
                f"closure fails: step(closure) raised TypeError: {exc} (step must accept an optional "
                f"closure)"
            ) from None
        except Exception as exc:  # noqa: BLE001
            why = (
                " (the closure ran with grad disabled: call it under torch.enable_grad())"
                if calls == [False]
                else ""
            )
            raise AssertionError(
                f"closure fails: step(closure) raised {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}{why}"
            ) from None
        assert calls == [True], (
            f"closure fails: the closure ran {len(calls)} times"
            if len(calls) != 1
            else "closure fails: the closure ran with grad disabled (call it under torch.enable_grad())"
        )
        assert isinstance(out, torch.Tensor) and float(out.detach()) == float(
            0.5 * ((W - A) ** 2).sum()
        ), f"closure fails: step(closure) returned {out!r}, not the closure's loss"
        _compare(ctx, "closure", [(W, W - A)], [prm.detach()], lr, p, "the", ctx.expect)

    return closure


def make_normalization(ctx: Context, ps):
    @given(
        st.tuples(ps, st.sampled_from(LRS)).flatmap(
            lambda t: st.tuples(
                st.just(t),
                _tensors(ctx, 1 if ctx.adapter.kind.value == "step" else 3, t[:1], scaled=True),
            )
        )
    )
    def normalization(case):
        (p, lr), pairs = case
        assume(all(bool((G != 0).any()) for _, G in pairs))
        if ctx.adapter.kind.value == "step":
            news = [user_call("normalization", ctx.adapter.step, pairs[0][0], pairs[0][1], lr, p)]
        else:
            prms = _params(pairs)
            _step(
                ctx,
                "normalization",
                ctx.adapter.optimizer([{"params": prms, "lr": lr, "p": p}], lr, p),
            )
            news = [q.detach() for q in prms]
        _compare(ctx, "normalization", pairs, news, lr, p, "the", ctx.expect)

    return normalization


#: property name -> builder (optimizers only; normalization only when a normalized step is declared)
GROUPS = {
    "param_groups": make_param_groups,
    "grad_none": make_grad_none,
    "closure": make_closure,
    "normalization": make_normalization,
}
