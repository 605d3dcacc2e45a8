"""Property-test kit for l_p mirror-descent implementations (docs/theory.md section 2), built on hypothesis.

Strategies:
    `exponents()` exact rational p in (1, 8] (2, 3, 7/4, values near 1, ...);
    `bounded_tensors()` float tensors bounded so that the mirror maps of that p cannot overflow;
    `attention_problems()` small `certify.AttentionProblem` instances.

Checker:
    `check_mirror_update(update, ...)` runs docs/theory.md section 2 properties against any implementation, given
    either a step function ``(W, G, lr, p) -> W_new`` or an optimizer factory
    ``(params, lr, p) -> torch.optim.Optimizer`` (an ``Optimizer`` subclass taking ``lr=`` and ``p=``
    also works). A failing implementation raises ``AssertionError`` naming the property, shrunk by
    hypothesis to a minimal counterexample (printed as the falsifying example).

Example:
    >>> from experiments.testing.kit import check_mirror_update
    >>> check_mirror_update(lambda W, G, lr, p: my_step(W, G, lr, p))  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import torch

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - hypothesis ships with the test extra
    raise ImportError("experiments.testing.kit needs hypothesis; install it with: pip install 'mdcert[test]'") from exc
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify import lp as ref
from certify.problem import AttentionProblem

__all__ = [
    "exponents",
    "bounded_tensors",
    "attention_problems",
    "check_mirror_update",
    "as_step_function",
    "PROPERTIES",
]

PROPERTIES = ("stationarity", "gradient_descent", "round_trip", "descent", "overflow")

_PINNED = ("2", "3", "7/4", "11/10", "101/100", "3/2", "4", "8", "5/4", "21/20")


def exponents(*, min_value: Fraction | str = Fraction(101, 100), max_value: Fraction | str = Fraction(8),
              max_denominator: int = 100) -> st.SearchStrategy[Fraction]:
    """Exact rational exponents ``p`` in ``[min_value, max_value]`` (default ``[1.01, 8]``).

    Mixes pinned values (2, 3, 7/4, 11/10, 101/100, ...), ``1 + 1/k`` (near 1) and random fractions with
    denominator ``<= max_denominator``. Shrinks towards ``min_value`` side values such as 2.
    """
    lo, hi = Fraction(min_value), Fraction(max_value)
    if not 1 < lo <= hi:
        raise ValueError(f"need 1 < min_value <= max_value, got {lo}, {hi}")
    pinned = [Fraction(x) for x in _PINNED if lo <= Fraction(x) <= hi]
    near_one = st.integers(1, 1000).map(lambda k: 1 + Fraction(1, k)).filter(lambda p: lo <= p <= hi)
    rand = st.fractions(min_value=lo, max_value=hi, max_denominator=max_denominator)
    parts = ([st.sampled_from(pinned)] if pinned else []) + [near_one, rand]
    return st.one_of(*parts)


def _safe_bound(p: Fraction | None, dtype: torch.dtype) -> float:
    """Largest magnitude M (halved) with M^{p-1} and M^{1/(p-1)} both finite in dtype."""
    log_max = math.log(torch.finfo(dtype).max)
    if p is None:
        return math.exp(log_max) / 4
    a = float(p - 1)
    return math.exp(log_max * min(a, 1 / a)) / 4


def bounded_tensors(shape=None, *, p: Any = None, dtype: torch.dtype = torch.float64,
                    max_abs: float = 4.0, min_abs: float = 0.0,
                    allow_zero: bool = True) -> st.SearchStrategy[torch.Tensor]:
    """Float tensors whose entries are bounded so the mirror maps of ``p`` stay finite in ``dtype``.

    Args:
        shape: a shape tuple, or None for 1-2 dims of side 1-5.
        p: exponent (str/Fraction/float); the bound is ``min(max_abs, fmax^{min(p-1, 1/(p-1))}/4)``.
        dtype: torch float dtype (elements are representable in it).
        max_abs: upper bound on ``|entry|``.
        min_abs: lower bound on ``|entry|`` for non-zero entries (keeps away from underflow).
        allow_zero: include exact zeros.
    """
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"bounded_tensors supports float32 and float64, got {dtype}")
    bound = min(max_abs, _safe_bound(None if p is None else ref.exponents_of(p).exact, dtype))
    lower = max(min_abs, 2.0 ** -60)
    width = 64
    if dtype == torch.float32:
        width = 32
        bound = float(np.nextafter(np.float32(bound), np.float32(0))) if float(np.float32(bound)) > bound \
            else float(np.float32(bound))
        lower = float(np.nextafter(np.float32(lower), np.float32(np.inf))) if float(np.float32(lower)) < lower \
            else float(np.float32(lower))
    mags = st.floats(min_value=lower, max_value=bound, allow_nan=False,
                     allow_infinity=False, allow_subnormal=False, width=width)
    signed = st.tuples(st.booleans(), mags).map(lambda t: -t[1] if t[0] else t[1])
    elements = st.one_of(st.just(0.0), signed) if allow_zero else signed
    shapes = hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5) if shape is None else st.just(tuple(shape))
    return shapes.flatmap(lambda s: hnp.arrays(np.float64, s, elements=elements)).map(
        lambda a: torch.from_numpy(a).to(dtype))


def attention_problems(*, n=st.integers(1, 4), T=st.integers(2, 5), d=st.integers(1, 4),
                       max_abs: float = 4.0) -> st.SearchStrategy[AttentionProblem]:
    """Small valid `AttentionProblem` instances (bounded finite float64 data, labels in {-1, +1})."""
    elem = st.floats(-max_abs, max_abs, allow_nan=False, allow_infinity=False, allow_subnormal=False)

    @st.composite
    def build(draw):
        nn_, TT, dd = draw(n), draw(T), draw(d)
        X = draw(hnp.arrays(np.float64, (nn_, TT, dd), elements=elem))
        y = draw(hnp.arrays(np.float64, (nn_,), elements=st.sampled_from([-1.0, 1.0])))
        z = draw(hnp.arrays(np.float64, (nn_, dd), elements=elem))
        v = draw(hnp.arrays(np.float64, (dd,), elements=elem))
        return AttentionProblem(X=X, y=y, z=z, v=v)

    return build()


# ---------------------------------------------------------------------------- adapters
def as_step_function(update: Callable, *, kind: str = "auto") -> Callable:
    """Turn a step function, an optimizer factory or an Optimizer class into ``(W, G, lr, p) -> W_new``.

    For an optimizer the returned function builds a float64 ``nn.Parameter`` from ``W``, sets its
    ``grad`` to ``G``, runs one ``step()`` and returns the new value. If ``step`` raises, the
    parameter is checked to be unchanged (nothing half-written) before the exception propagates.
    """
    if kind == "auto":
        if isinstance(update, type) and issubclass(update, torch.optim.Optimizer):
            kind = "optimizer_class"
        else:
            try:
                n_args = len([q for q in inspect.signature(update).parameters.values()
                              if q.default is inspect.Parameter.empty
                              and q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)])
            except (TypeError, ValueError):
                n_args = 4
            kind = "optimizer" if n_args == 3 else "step"
    if kind == "step":
        return update
    if kind == "optimizer_class":
        cls = update
        update = lambda params, lr, p: cls(params, lr=lr, p=p)  # noqa: E731
    elif kind != "optimizer":
        raise ValueError(f"kind must be 'auto', 'step' or 'optimizer', got {kind!r}")
    factory = update

    def step(W: torch.Tensor, G: torch.Tensor, lr: float, p: Fraction) -> torch.Tensor:
        param = torch.nn.Parameter(W.detach().clone())
        param.grad = G.detach().clone()
        before = param.detach().clone()
        opt = factory([param], lr, p)
        try:
            opt.step()
        except Exception:
            if not torch.equal(param.detach(), before):
                raise AssertionError("the optimizer raised but left the parameter half-written "
                                     "(it must be unchanged when step() raises)") from None
            raise
        return param.detach().clone()

    return step


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def _close(actual: np.ndarray, expected: np.ndarray, scale: np.ndarray, rtol: float) -> np.ndarray:
    return np.abs(actual - expected) <= rtol * scale + 1e-300


# ---------------------------------------------------------------------------- checker
def check_mirror_update(update: Callable, *, p: Any = None, kind: str = "auto", max_examples: int = 40,
                        rtol: float = 1e-9, gd_bitwise: bool = False,
                        mirror_map: Callable | None = None, inverse_mirror_map: Callable | None = None,
                        properties: tuple[str, ...] = PROPERTIES) -> None:
    """Assert the docs/theory.md section 2 properties of an l_p mirror-descent update (float64).

    Properties (each a hypothesis test; a failure shrinks to a minimal counterexample):
        stationarity: ``grad psi(W+) = grad psi(W) - lr G`` entrywise within ``rtol`` of the scale
            ``|grad psi(W)| + lr |G|`` (the reference maps are `certify.lp`).
        gradient_descent: at p = 2, ``W+ = W - lr G`` (bit for bit with ``torch.add(W, G, alpha=-lr)``
            when ``gd_bitwise``).
        round_trip: a zero gradient leaves W unchanged (inverse map after mirror map); with
            ``mirror_map``/``inverse_mirror_map`` given, also ``inv(map(W)) = W`` and ``map(inv(Q)) = Q``.
        descent: on the convex loss ``L(W) = ||W - A||^2 / 2`` with ``G = W - A`` and a step small enough
            that the exact update moves each entry by at most ``|G|``, ``L(W+) <= L(W)`` (up to rounding
            noise of a few ulps per entry), checked with the exact identity ``L(W+) - L(W) = <G, dW> + ||dW||^2 / 2``.
        overflow: a step whose result overflows float64, or a non-finite gradient, raises
            ``FloatingPointError`` (a clipped or non-finite result fails); an optimizer must leave the
            parameter unchanged.

    Args:
        update: step function ``(W, G, lr, p) -> W_new`` (must not modify W), optimizer factory
            ``(params, lr, p) -> Optimizer``, or an Optimizer class accepting ``lr=`` and ``p=``.
        p: test only this exponent (default: `exponents()`); ``p`` reaches ``update`` as a `Fraction`.
        kind: ``"auto"`` (3 required positional args = factory), ``"step"`` or ``"optimizer"``.
        max_examples: hypothesis examples per property.
        rtol: relative tolerance of the float64 comparisons.
        gd_bitwise: require bitwise equality with ``torch.add(W, G, alpha=-lr)`` at p = 2.
        mirror_map, inverse_mirror_map: optional ``(tensor, p) -> tensor`` maps to round-trip directly.
        properties: subset of `PROPERTIES` to run.

    Raises:
        AssertionError: a property fails (message names it; hypothesis prints the minimal example).

    Call it from a plain test function (not one decorated with ``@given``); it respects the active
    hypothesis profile (e.g. the deterministic ``ci`` profile) apart from the settings above.
    """
    unknown = set(properties) - set(PROPERTIES)
    if unknown:
        raise ValueError(f"unknown properties {sorted(unknown)}; choose from {PROPERTIES}")
    step = as_step_function(update, kind=kind)
    ps = st.just(ref.exponents_of(p).exact) if p is not None else exponents()
    # no "explain" phase: it re-runs the failing case hundreds of times and adds little here
    cfg = settings(max_examples=max_examples, deadline=None, database=None,
                   phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                          HealthCheck.data_too_large])

    def run(W: torch.Tensor, G: torch.Tensor, lr: float, pp: Fraction, what: str) -> torch.Tensor:
        W0 = W.clone()
        out = step(W, G, lr, pp)
        if not isinstance(out, torch.Tensor) or out.shape != W.shape:
            raise AssertionError(f"{what}: update must return a tensor of shape {tuple(W.shape)}, got {out!r}")
        if not torch.equal(W, W0):
            raise AssertionError(f"{what}: the step function modified its input W in place")
        return out

    pairs = st.tuples(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4), ps).flatmap(
        lambda sp: st.tuples(bounded_tensors(sp[0], max_abs=4.0), bounded_tensors(sp[0], max_abs=4.0),
                             st.sampled_from([1e-3, 0.1, 0.5, 1.0]), st.just(sp[1])))

    if "stationarity" in properties:
        @cfg
        @given(pairs)
        def stationarity(case):
            W, G, lr, pp = case
            new = run(W, G, lr, pp, "stationarity")
            assert bool(torch.isfinite(new).all()), (
                f"stationarity: non-finite result for finite W, G (p={pp}, lr={lr})")
            mW = ref.mirror_map(_np(W), pp)
            expected = mW - lr * _np(G)
            got = ref.mirror_map(_np(new), pp)
            scale = np.abs(mW) + lr * np.abs(_np(G))
            ok = _close(got, expected, scale, rtol)
            # where the exact W+ underflows float64 (|W+| < smallest normal) only its size is checked
            tiny = np.finfo(np.float64).tiny
            with np.errstate(over="ignore"):
                exact_new = np.abs(expected) ** float(1 / (pp - 1))
            under = exact_new < tiny
            ok |= under & (np.abs(_np(new)) <= 2 * tiny)
            assert ok.all(), (
                f"stationarity fails: grad psi(W+) != grad psi(W) - lr*G at p={pp}, lr={lr}: "
                f"got {got[~ok][:3]}, expected {expected[~ok][:3]} (W={_np(W)[~ok][:3]}, G={_np(G)[~ok][:3]}, "
                f"W+={_np(new)[~ok][:3]})")

        stationarity()

    if "gradient_descent" in properties and (p is None or ref.exponents_of(p).exact == 2):
        @cfg
        @given(st.tuples(bounded_tensors(max_abs=1e3), st.sampled_from([1e-3, 0.1, 0.37, 1.0])).flatmap(
            lambda t: st.tuples(st.just(t[0]), bounded_tensors(tuple(t[0].shape), max_abs=1e3), st.just(t[1]))))
        def gradient_descent(case):
            W, G, lr = case
            new = run(W, G, lr, Fraction(2), "gradient_descent")
            gd = torch.add(W, G, alpha=-lr)
            if gd_bitwise:
                assert torch.equal(new, gd), (
                    f"p = 2 is not gradient descent bit for bit: max diff {float((new - gd).abs().max())} (lr={lr})")
            ok = _close(_np(new), _np(gd), np.abs(_np(W)) + lr * np.abs(_np(G)), rtol)
            assert ok.all(), (f"p = 2 is not gradient descent: got {_np(new)[~ok][:3]}, "
                              f"expected W - lr*G = {_np(gd)[~ok][:3]} (lr={lr})")

        gradient_descent()

    if "round_trip" in properties:
        @cfg
        @given(st.tuples(bounded_tensors(max_abs=1e3, min_abs=1e-3), ps))
        def round_trip(case):
            W, pp = case
            new = run(W, torch.zeros_like(W), 0.5, pp, "round_trip")
            ok = _close(_np(new), _np(W), np.abs(_np(W)), rtol)
            assert ok.all(), (f"round trip fails: a zero-gradient step moved W at p={pp}: "
                              f"W={_np(W)[~ok][:3]} -> {_np(new)[~ok][:3]} (inverse map is not the "
                              f"inverse of the mirror map)")
            if mirror_map is not None and inverse_mirror_map is not None:
                back = inverse_mirror_map(mirror_map(W, pp), pp)
                ok = _close(_np(back), _np(W), np.abs(_np(W)), rtol)
                assert ok.all(), f"round trip fails: inv(map(W)) != W at p={pp}: {_np(W)[~ok][:3]} -> {_np(back)[~ok][:3]}"
                Q = ref.mirror_map(_np(W), pp)
                fwd = mirror_map(inverse_mirror_map(torch.from_numpy(Q), pp), pp)
                ok = _close(_np(fwd), Q, np.abs(Q), rtol)
                assert ok.all(), f"round trip fails: map(inv(Q)) != Q at p={pp}"

        round_trip()

    if "descent" in properties:
        @cfg
        @given(pairs)
        def descent(case):
            W, A, _, pp = case
            G = W - A
            lr = _descent_lr(_np(W), _np(G), pp)
            if lr is None:  # G = 0, or no lr >= 1e-12 is small enough: nothing to check here
                return
            new = run(W, G, lr, pp, "descent")
            dW = _np(new) - _np(W)
            g = _np(G)
            change = float(np.dot(g.ravel(), dW.ravel()) + 0.5 * np.dot(dW.ravel(), dW.ravel()))
            # rounding noise: each entry may land an ulp or so off the exact update
            tol = 16 * np.finfo(np.float64).eps * float(np.sum(np.abs(g) * (np.abs(_np(W)) + np.abs(_np(new)))))
            assert change <= tol, (
                f"descent fails: L(W+) - L(W) = {change:.3e} > 0 on L = ||W - A||^2/2 at p={pp}, lr={lr:.3e} "
                f"(W={_np(W).ravel()[:4]}, G={g.ravel()[:4]}, W+={_np(new).ravel()[:4]})")

        descent()

    if "overflow" in properties:
        @cfg
        @given(st.tuples(ps, st.integers(1, 4), st.sampled_from(["overflow", "nan", "inf"])))
        def overflow(case):
            pp, size, mode = case
            fmax = torch.finfo(torch.float64).max
            W = torch.ones(size, dtype=torch.float64)
            if mode == "overflow":
                # |Q| = 1 + lr*|G| with lr*|G| > fmax: overflow of the dual step itself
                G = torch.full((size,), -fmax / 2, dtype=torch.float64)
                lr = 8.0
                if pp < 2:  # also overflow of the inverse map: |Q|^{1/(p-1)} > fmax
                    lr = 1.0
                    G = torch.full((size,), -min(fmax / 4, 2.0 ** (1030 * float(pp - 1))), dtype=torch.float64)
            else:
                G = torch.zeros(size, dtype=torch.float64)
                G[-1] = math.nan if mode == "nan" else math.inf
                lr = 0.1
            try:
                new = step(W, G, lr, pp)
            except FloatingPointError:
                return
            raise AssertionError(
                f"overflow fails: a step with {mode} (p={pp}, lr={lr}, G={_np(G)[:2]}) returned "
                f"{_np(new)[:2]} instead of raising FloatingPointError (clipping or returning inf/nan is wrong)")

        overflow()


def _descent_lr(W: np.ndarray, G: np.ndarray, p: Fraction) -> float | None:
    """Largest lr in {10^-k} whose exact (reference) update moves every entry by at most |G| (so the
    quadratic loss decreases by at least half the first-order term)."""
    if not np.any(G != 0):
        return None
    Q = ref.mirror_map(W, p)
    for k in range(1, 13):
        lr = 10.0 ** -k
        new = ref.inverse_mirror_map(Q - lr * G, p)
        if np.all(np.abs(new - W) <= np.abs(G)):
            return lr
    return None
