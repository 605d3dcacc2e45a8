"""Single-tensor properties of an l_p mirror-descent update (docs/theory.md section 2), as hypothesis tests.

Each ``make_*`` returns a test body ``(ctx, ps) -> callable`` that the runner (`experiments.testing.check`)
decorates with its settings and runs once per (p regime, dtype, device) cell; a failure raises
``AssertionError`` whose message names the property and shows the shrunk counterexample.

    stationarity      grad psi(W+) = grad psi(W) - lr G (G normalized when declared)
    gradient_descent  at p = 2, W+ = W - lr G (bit for bit with ``gd_bitwise``)
    round_trip        a zero gradient leaves W unchanged (and optional user maps invert each other)
    descent           a small enough step decreases L(W) = ||W - A||^2/2
    overflow          an overflowing step or a non-finite gradient raises FloatingPointError, and an
                      optimizer leaves the parameter unchanged
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify import lp as ref
from experiments.testing.adapters import Adapter, KitUsageError
from experiments.testing.reference import (
    Expectation,
    diagnose_scales,
    dual_mismatch,
    expected_duals,
    fmt,
    grad_scales,
    to_np,
)
from experiments.testing.strategies import bounded_tensors, p_text, safe_bound

__all__ = [
    "Context",
    "SINGLE",
    "user_call",
    "guess_hint",
    "tensor_pairs",
    "resolvable",
    "make_stationarity",
    "make_gradient_descent",
    "make_round_trip",
    "make_descent",
    "make_overflow",
]

LRS = (1e-3, 0.1, 0.5, 1.0)
#: gradient magnitudes 10^-s tried when a normalized step is declared (an epsilon added to ||G|| shows
#: there), per dtype: float32 stops where squares of the entries would leave the normal range
GRAD_EXPONENTS = {torch.float64: (0, 6, 12, 15, 18), torch.float32: (0, 4, 8, 12)}


@dataclass(frozen=True)
class Context:
    """One cell of a kit run: the adapter, where it runs and what the step must do."""

    adapter: Adapter
    dtype: torch.dtype
    device: torch.device
    expect: Expectation
    gd_bitwise: bool = False
    mirror_map: Callable | None = None
    inverse_mirror_map: Callable | None = None

    def tensor(self, a) -> torch.Tensor:
        return torch.as_tensor(a).to(device=self.device, dtype=self.dtype)

    @property
    def eps(self) -> float:
        return float(torch.finfo(self.dtype).eps)

    @property
    def tiny(self) -> float:
        return float(torch.finfo(self.dtype).tiny)


def user_call(what: str, fn: Callable, *args, expected: tuple = (), hint: str = ""):
    """Call user code; an unexpected exception becomes an AssertionError naming the property (and
    ``hint``, e.g. that the kind of update was only guessed)."""
    try:
        return fn(*args)
    except (KitUsageError, AssertionError):
        raise
    except expected:
        raise
    except Exception as exc:  # noqa: BLE001 - any crash of user code is a finding
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise AssertionError(
            f"{what} fails: the update raised {type(exc).__name__}: {first}{hint}"
        ) from None


def guess_hint(ctx: "Context") -> str:
    """A note for crash messages when the update's kind was guessed from its signature."""
    if not ctx.adapter.guessed:
        return ""
    return (
        f" (it was called as {'a step function' if ctx.adapter.kind.value == 'step' else 'an optimizer factory'}, "
        f"guessed from its signature; pass kind= if that is wrong)"
    )


def run_step(
    ctx: Context,
    W: torch.Tensor,
    G: torch.Tensor,
    lr: float,
    p: Fraction,
    what: str,
    *,
    expected: tuple = (),
) -> torch.Tensor:
    """One step through the adapter; checks the shape and that a step function left W alone
    (exceptions in ``expected`` propagate unchanged)."""
    W0 = W.clone()
    out = user_call(what, ctx.adapter.step, W, G, lr, p, hint=guess_hint(ctx), expected=expected)
    if out.shape != W.shape:
        raise AssertionError(
            f"{what}: the update returned shape {tuple(out.shape)} for W of shape {tuple(W.shape)}"
        )
    if not torch.equal(W, W0):
        raise AssertionError(f"{what}: the step function modified its input W in place")
    return out


def tensor_pairs(ctx: Context, ps, *, max_abs: float = 4.0):
    """(W, G, lr, p) with W, G bounded so the exact step is finite in ctx.dtype; G scaled by 10^-s
    when a normalized step is declared."""
    exps = st.sampled_from(GRAD_EXPONENTS[ctx.dtype]) if ctx.expect.normalize else st.just(0)

    def build(sp):
        shape, p = sp
        b = min(max_abs, safe_bound(p, ctx.dtype))
        return st.tuples(
            bounded_tensors(shape, p=p, dtype=ctx.dtype, max_abs=b),
            bounded_tensors(shape, dtype=ctx.dtype, max_abs=b),
            st.sampled_from(LRS),
            st.just(p),
            exps,
        )

    return (
        st.tuples(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4), ps)
        .flatmap(build)
        .map(lambda t: (ctx.tensor(t[0]), ctx.tensor(t[1] * 10.0 ** -t[4]), t[2], t[3]))
        .filter(lambda t: not ctx.expect.normalize or resolvable(ctx, t[1]))
    )


def resolvable(ctx: Context, G: torch.Tensor) -> bool:
    """A gradient whose norm the dtype computes accurately: zero, or largest entry at least 1e4
    sqrt(tiny) (below that, squares leave the normal range and any norm loses digits)."""
    m = float(G.abs().max()) if G.numel() else 0.0
    return m == 0.0 or m >= 1e4 * ctx.tiny**0.5


def _check_step(ctx: Context, W, G, new, lr, p, what: str) -> None:
    Wn, Gn, nn_ = to_np(W), to_np(G), to_np(new)
    nonfinite = ~np.isfinite(nn_)
    if nonfinite.any():
        raise AssertionError(
            f"{what} fails: non-finite result W+={fmt(nn_[nonfinite])} for finite W={fmt(Wn[nonfinite])}, "
            f"G={fmt(Gn[nonfinite])} (p={p_text(p)}, lr={lr}, {ctx.dtype})"
        )
    (expected,), (scale,) = expected_duals([Wn], [Gn], lr, p, ctx.expect)
    bad = dual_mismatch(Wn, nn_, expected, scale, p, ctx.expect.rtol, tiny=ctx.tiny)
    if bad.any():
        raise AssertionError(
            f"{what} fails: grad psi(W+) != grad psi(W) - lr*G{'/||G||' if ctx.expect.normalize else ''} at "
            f"p={p_text(p)}, lr={lr}, {ctx.dtype}: W={fmt(Wn[bad])}, G={fmt(Gn[bad])}, W+={fmt(nn_[bad])}, expected "
            f"grad psi(W+)={fmt(expected[bad])}, got {fmt(ref.mirror_map(nn_, p)[bad])}; "
            f"{diagnose_scales([Wn], [nn_], [Gn], lr, p, rtol=ctx.expect.rtol, eps=ctx.eps)}"
        )


def make_stationarity(ctx: Context, ps):
    @given(tensor_pairs(ctx, ps))
    def stationarity(case):
        W, G, lr, p = case
        if ctx.expect.normalize:
            assume(bool((G != 0).any()))
        _check_step(ctx, W, G, run_step(ctx, W, G, lr, p, "stationarity"), lr, p, "stationarity")

    return stationarity


def make_gradient_descent(ctx: Context, ps):
    big = min(1e3, safe_bound(Fraction(2), ctx.dtype))

    @given(
        st.tuples(
            bounded_tensors(max_abs=big, dtype=ctx.dtype), st.sampled_from([1e-3, 0.1, 0.37, 1.0])
        ).flatmap(
            lambda t: st.tuples(
                st.just(t[0]),
                bounded_tensors(tuple(t[0].shape), max_abs=big, dtype=ctx.dtype),
                st.just(t[1]),
            )
        )
    )
    def gradient_descent(case):
        W, G, lr = ctx.tensor(case[0]), ctx.tensor(case[1]), case[2]
        if ctx.expect.normalize:
            assume(bool((G != 0).any()))
        new = run_step(ctx, W, G, lr, Fraction(2), "gradient_descent")
        c = 1.0
        if ctx.expect.normalize:
            c = float(
                torch.linalg.vector_norm(
                    G.double(), ord=2 if ctx.expect.norm == "dual" else float(ctx.expect.norm)
                )
            )
        gd = torch.add(W, G / c if c != 1.0 else G, alpha=-lr)
        if ctx.gd_bitwise and not ctx.expect.normalize:
            assert torch.equal(new, gd), (
                f"p = 2 is not gradient descent bit for bit: max diff "
                f"{float((new - gd).abs().max())} (lr={lr}, {ctx.dtype})"
            )
        scale = np.abs(to_np(W)) + lr * np.abs(to_np(G)) / c
        bad = np.abs(to_np(new) - to_np(gd)) > ctx.expect.rtol * scale + 1e-300
        rule = "W - lr*G/||G||" if ctx.expect.normalize else "W - lr*G"
        assert not bad.any(), (
            f"p = 2 is not gradient descent: got {fmt(to_np(new)[bad])}, expected {rule} = "
            f"{fmt(to_np(gd)[bad])} (G={fmt(to_np(G)[bad])}, lr={lr}, {ctx.dtype})"
        )

    return gradient_descent


def make_round_trip(ctx: Context, ps):
    @given(
        st.tuples(ps, st.integers(1, 4)).flatmap(
            lambda t: st.tuples(
                bounded_tensors(
                    (t[1],),
                    p=t[0],
                    dtype=ctx.dtype,
                    max_abs=min(1e3, safe_bound(t[0], ctx.dtype)),
                    min_abs=1e-3,
                ),
                st.just(t[0]),
            )
        )
    )
    def round_trip(case):
        W, p = ctx.tensor(case[0]), case[1]
        try:
            new = run_step(
                ctx, W, torch.zeros_like(W), 0.5, p, "round_trip", expected=(FloatingPointError,)
            )
        except FloatingPointError:
            if ctx.expect.normalize:  # a normalized step is undefined at G = 0: refusing is fine
                return
            raise AssertionError(
                f"round_trip: a zero-gradient step raised FloatingPointError (p={p_text(p)})"
            ) from None
        bad = np.abs(to_np(new) - to_np(W)) > ctx.expect.rtol * np.abs(to_np(W))
        assert not bad.any(), (
            f"round trip fails: a zero-gradient step moved W at p={p_text(p)}: W={fmt(to_np(W)[bad])} "
            f"-> {fmt(to_np(new)[bad])} (the inverse map is not the inverse of the mirror map)"
        )
        if ctx.mirror_map is not None and ctx.inverse_mirror_map is not None:
            up = ctx.adapter.exponent(p)
            back = user_call("round_trip", ctx.inverse_mirror_map, ctx.mirror_map(W, up), up)
            bad = np.abs(to_np(back) - to_np(W)) > ctx.expect.rtol * np.abs(to_np(W))
            assert not bad.any(), (
                f"round trip fails: inv(map(W)) != W at p={p_text(p)}: {fmt(to_np(W)[bad])}"
            )

    return round_trip


def _descent_lr(W: np.ndarray, G: np.ndarray, used: np.ndarray, p: Fraction) -> float | None:
    """Largest lr in {10^-k} whose exact update along ``used`` (G, or G normalized) moves every entry by
    at most |G| (so the quadratic loss decreases by at least half the first-order term)."""
    if not np.any(G != 0):
        return None
    Q = ref.mirror_map(W, p)
    for k in range(1, 19):
        lr = 10.0**-k
        if np.all(np.abs(ref.inverse_mirror_map(Q - lr * used, p) - W) <= np.abs(G)):
            return lr
    return None


def make_descent(ctx: Context, ps):
    @given(tensor_pairs(ctx, ps))
    def descent(case):
        W, A, _, p = case
        G = W - A
        g = to_np(G)
        c = 1.0
        if ctx.expect.normalize and np.any(g != 0):
            c = grad_scales([g], p, ctx.expect)[0]
        lr = _descent_lr(to_np(W), g, g / c, p)
        if lr is None:  # G = 0, or no lr >= 1e-18 is small enough: nothing to check here
            return
        new = run_step(ctx, W, G, lr, p, "descent")
        assert bool(torch.isfinite(new).all()), (
            f"descent fails: non-finite W+={fmt(to_np(new), 4)} for W={fmt(to_np(W), 4)}, G={fmt(g, 4)} at "
            f"p={p_text(p)}, lr={lr:.3e}, {ctx.dtype}"
        )
        dW = to_np(new) - to_np(W)
        change = float(np.dot(g.ravel(), dW.ravel()) + 0.5 * np.dot(dW.ravel(), dW.ravel()))
        tol = 16 * ctx.eps * float(np.sum(np.abs(g) * (np.abs(to_np(W)) + np.abs(to_np(new)))))
        assert change <= tol, (
            f"descent fails: L(W+) - L(W) = {change:.3e} > 0 on L = ||W - A||^2/2 at p={p_text(p)}, lr={lr:.3e}, "
            f"{ctx.dtype} (W={fmt(to_np(W), 4)}, G={fmt(g, 4)}, W+={fmt(to_np(new), 4)})"
        )

    return descent


def make_overflow(ctx: Context, ps):
    fmax = float(torch.finfo(ctx.dtype).max)
    emax = math.log2(fmax)

    @given(st.tuples(ps, st.integers(1, 4), st.sampled_from(["overflow", "nan", "inf"])))
    def overflow(case):
        p, size, mode = case
        if ctx.expect.normalize and mode == "overflow":
            size = 1  # G/||G|| = -1 whatever the norm
        W = ctx.tensor(np.ones(size))
        if mode == "overflow":
            t = (emax + 6) * float(p - 1)  # |Q|^(1/(p-1)) > fmax for |Q| > 2^t
            inverse = t <= emax - 2  # 2^t representable: the inverse map can overflow
            if ctx.expect.normalize:  # the step is lr per unit norm: lr itself is big
                assume(inverse)  # (otherwise a normalized step cannot overflow)
                G, lr = np.full(size, -1.0), 2.0**t
            elif inverse:  # the inverse map overflows (p < 2, not too close)
                G, lr = np.full(size, -(2.0**t)), 1.0
            else:  # the dual step lr*G itself overflows
                G, lr = np.full(size, -fmax / 2), 8.0
        else:
            G, lr = np.zeros(size), 0.1
            G[-1] = math.nan if mode == "nan" else math.inf
        Gt = ctx.tensor(G)
        try:
            new = user_call(
                "overflow",
                ctx.adapter.step,
                W,
                Gt,
                lr,
                p,
                expected=(FloatingPointError,),
                hint=guess_hint(ctx),
            )
        except FloatingPointError:
            return
        what = (
            f"a step that overflows {ctx.dtype}"
            if mode == "overflow"
            else f"a gradient with {mode}"
        )
        raise AssertionError(
            f"overflow fails: {what} (p={p_text(p)}, lr={lr}, W={fmt(to_np(W), 2)}, G={fmt(G, 2)}) returned "
            f"{fmt(to_np(new), 2)} instead of raising FloatingPointError (returning inf/nan or clipping is wrong)"
        )

    return overflow


#: property name -> builder, in report order (the single-tensor properties apply to both kinds)
SINGLE = {
    "stationarity": make_stationarity,
    "gradient_descent": make_gradient_descent,
    "round_trip": make_round_trip,
    "descent": make_descent,
    "overflow": make_overflow,
}
