"""The kit's ``smoothed_sign`` property (docs/theory.md section 8.7): a step function or optimizer
equals the smoothed sign step ``w - lr g / (|g| + eps)`` (elementwise; Adam without momentum) bit
for bit on the safe band of gradients, with a documented rounding.

Reference (every operation in the parameter's dtype, ``lr`` and ``eps`` rounded to it first, IEEE
round to nearest): ``W + ((-lr) * G) / (|G| + eps)`` - the operation order of ``torch.addcdiv(W,
G, |G| + eps, value=-lr)``, which is what ``torch.optim.Adam`` applies. Safe band: ``G = 0`` or
``2^(e_lo) <= |G| < 2^(e_hi)`` with ``(e_lo, e_hi) = (-511, 512)`` in float64 and ``(-63, 64)``
in float32, where ``G * G`` is a normal float, so a correctly rounded ``sqrt(G * G)`` is ``|G|``
exactly.

The user's update is a step function ``(W, G, lr, eps) -> W_new`` or an optimizer: a class taking
``lr=`` and ``eps=``, or a factory ``(params, lr, eps) -> Optimizer`` (``params``: one torch
parameter group with "params", "lr" and "eps").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from experiments.testing.adapters import Kind, KitUsageError, make_adapter

__all__ = [
    "BANDS",
    "BAND_EXPONENTS",
    "band_limits",
    "in_band",
    "smoothed_sign_reference",
    "SignCaller",
    "make_sign_caller",
    "SignSample",
    "sample_gradients",
    "describe_mismatch",
    "sqrt_inexact",
    "sample_smoothed_sign",
    "make_smoothed_sign",
]

#: band part name -> label in reports; band="safe" runs the first, band="full" both
BANDS = ("safe band", "outside band")
#: dtype -> (e_lo, e_hi): the safe band is 2^e_lo <= |g| < 2^e_hi (g * g normal), plus g = 0
BAND_EXPONENTS = {torch.float64: (-511, 512), torch.float32: (-63, 64)}
#: learning rates tried (one per hypothesis example, cycled over the vectorized sample's chunks)
LRS = (1e-3, 0.1, 0.37, 1.0)
_MANT = {torch.float64: 52, torch.float32: 23}
_EMIN_SUB = {torch.float64: -1074, torch.float32: -149}
_EMAX = {torch.float64: 1023, torch.float32: 127}


def band_limits(dtype: torch.dtype) -> tuple[float, float]:
    """``(lo, hi)``: the safe band is ``lo <= |g| < hi`` (and g = 0)."""
    e_lo, e_hi = BAND_EXPONENTS[dtype]
    return 2.0**e_lo, 2.0**e_hi


def in_band(G: torch.Tensor) -> torch.Tensor:
    """Boolean mask of the entries of G in the safe band of G's dtype."""
    lo, hi = band_limits(G.dtype)
    a = G.abs()
    return (a == 0) | ((a >= lo) & (a < hi))


def smoothed_sign_reference(
    W: torch.Tensor, G: torch.Tensor, lr: float, eps: float
) -> torch.Tensor:
    """``W + ((-lr) * G) / (|G| + eps)``, each operation rounded to W's dtype (module docstring)."""
    neg_lr = torch.tensor(-lr, dtype=W.dtype, device=W.device)
    e = torch.tensor(eps, dtype=W.dtype, device=W.device)
    return W + (neg_lr * G) / (G.abs() + e)


@dataclass(frozen=True)
class SignCaller:
    """How the property calls the user's update (built by `make_sign_caller`).

    Attributes:
        kind: `Kind`; name: for messages; fn: the update as given.
    """

    kind: Kind
    name: str
    fn: Callable

    def how(self) -> str:
        what = (
            "a step function (W, G, lr, eps) -> W_new"
            if self.kind is Kind.STEP
            else "an optimizer (params, lr, eps) -> Optimizer"
        )
        return f"{self.name} as {what}"

    def step(self, W: torch.Tensor, G: torch.Tensor, lr: float, eps: float) -> torch.Tensor:
        """One update of one tensor: ``W_new`` (W itself is left alone)."""
        if self.kind is Kind.STEP:
            out = self.fn(W.clone(), G.clone(), lr, eps)
            if not isinstance(out, torch.Tensor):
                raise KitUsageError(
                    f"{self.name} returned {type(out).__name__}, not a tensor; "
                    f"if it is an optimizer factory, pass kind='optimizer'"
                )
            return out
        param = torch.nn.Parameter(W.detach().clone())
        param.grad = G.detach().clone()
        if isinstance(self.fn, type):
            opt = self.fn([param], lr=lr, eps=eps)
        else:
            opt = self.fn([{"params": [param], "lr": lr, "eps": eps}], lr, eps)
        if not isinstance(opt, torch.optim.Optimizer):
            raise KitUsageError(
                f"{self.name} returned {type(opt).__name__}, not a torch.optim.Optimizer; "
                f"if it is a step function, pass kind='step'"
            )
        opt.step()
        return param.detach().clone()


def make_sign_caller(update: Callable, *, kind: str = "auto") -> SignCaller:
    """A `SignCaller`; the kind is guessed as for the l_p properties (`make_adapter`)."""
    adapter = make_adapter(update, kind=kind)
    return SignCaller(adapter.kind, adapter.name, update)


def sample_gradients(
    n: int, dtype: torch.dtype, *, part: str, generator: torch.Generator
) -> torch.Tensor:
    """n gradients of ``dtype`` with random signs, log-uniform over the band part (``BANDS``):
    mantissa bits uniform, binary exponent uniform; the safe part also holds 0 and both band
    edges."""
    e_lo, e_hi = BAND_EXPONENTS[dtype]
    if part == BANDS[0]:
        e = torch.randint(e_lo, e_hi, (n,), generator=generator)
    else:  # subnormal and small normal below the band, or 2^e_hi up to the largest finite float
        below = e_lo - _EMIN_SUB[dtype]
        k = torch.randint(0, below + _EMAX[dtype] + 1 - e_hi, (n,), generator=generator)
        e = torch.where(k < below, _EMIN_SUB[dtype] + k, e_hi + (k - below))
    bits = _MANT[dtype]
    frac = (
        torch.randint(0, 2**bits, (n,), generator=generator, dtype=torch.int64).double() / 2.0**bits
    )
    sign = torch.randint(0, 2, (n,), generator=generator).double() * 2 - 1
    G = torch.ldexp(sign * (1 + frac), e.double()).to(dtype)
    if part == BANDS[0] and n >= 4:
        G[:4] = torch.tensor(
            [0.0, 2.0**e_lo, -(2.0**e_hi) * (1 - 2.0 ** -(bits + 1)), -0.0], dtype=dtype
        )
    return G


@dataclass(frozen=True)
class SignSample:
    """A vectorized comparison with the reference.

    Attributes:
        dtype: "float32" | "float64"; part: band part (`BANDS`); eps: the update's epsilon.
        checked: gradients compared; mismatches: how many differed by more than ``ulps`` units in
            the last place; first: the first mismatch as text ("" when none).
        sqrt_inexact: sampled gradients where this torch's ``sqrt(G * G)`` is not ``|G|`` (a square
            root that is not correctly rounded; outside the band also over/underflow of ``G * G``);
        unexplained: mismatches at gradients where ``sqrt(G * G) == |G|``.
    """

    dtype: str
    part: str
    eps: float
    checked: int
    mismatches: int
    first: str = ""
    sqrt_inexact: int = 0
    unexplained: int = 0


def _mismatch(new: torch.Tensor, ref: torch.Tensor, ulps: int) -> torch.Tensor:
    same = (new == ref) | (torch.isnan(new) & torch.isnan(ref))
    if ulps == 0:
        return ~same
    gap = torch.abs(new.double() - ref.double())
    spacing = torch.from_numpy(np.spacing(np.abs(ref.cpu().numpy()))).to(gap.device).double()
    return ~same & ~(gap <= ulps * spacing)


def sqrt_inexact(G: torch.Tensor) -> torch.Tensor:
    """Mask of the entries where torch's ``sqrt(G * G)`` (G's dtype and device) is not ``|G|``."""
    return torch.sqrt(G * G) != G.abs()


def describe_mismatch(W, G, new, ref, lr: float, eps: float, i: int) -> str:
    """One counterexample as text (entry i), with torch's ``sqrt(G * G)`` when it is not ``|G|``."""
    w, g, a, b = (float(t.reshape(-1)[i]) for t in (W, G, new, ref))
    gi = G.reshape(-1)[i : i + 1]
    text = (
        f"W={w!r}, G={g!r}, lr={lr}, eps={eps}: got W+={a!r}, "
        f"expected W + (-lr*G)/(|G|+eps) = {b!r} ({str(W.dtype).replace('torch.', '')}; "
        f"{'in' if bool(in_band(gi)) else 'outside'} the band"
    )
    if bool(sqrt_inexact(gi)):
        text += f"; here torch's sqrt(G*G) = {float(torch.sqrt(gi * gi))!r}, not |G|"
    return text + ")"


def sample_smoothed_sign(
    update: Callable,
    *,
    dtype: torch.dtype,
    n: int,
    eps: float = 1e-8,
    part: str = BANDS[0],
    kind: str = "auto",
    ulps: int = 0,
    seed: int = 0,
    chunk: int = 1 << 18,
    device: str = "cpu",
) -> SignSample:
    """Compare ``update`` with the reference on n sampled gradients (big tensors, not hypothesis
    examples), derandomized by ``seed``; lr cycles through `LRS` chunk by chunk, W is normal times
    2^k, |k| <= 8."""
    if dtype not in BAND_EXPONENTS:
        raise KitUsageError(f"dtype must be torch.float64 or torch.float32, got {dtype}")
    if part not in BANDS:
        raise KitUsageError(f"part must be one of {BANDS}, got {part!r}")
    caller = make_sign_caller(update, kind=kind)
    gen = torch.Generator().manual_seed(seed)
    bad, first, done, c, inexact, unexplained = 0, "", 0, 0, 0, 0
    while done < n:
        m = min(chunk, n - done)
        G = sample_gradients(m, dtype, part=part, generator=gen)
        W = (
            torch.randn(m, generator=gen, dtype=torch.float64)
            * torch.exp2(torch.randint(-8, 9, (m,), generator=gen).double())
        ).to(dtype)
        lr = LRS[c % len(LRS)]
        G, W = G.to(device), W.to(device)
        new, ref = caller.step(W, G, lr, eps), smoothed_sign_reference(W, G, lr, eps)
        mask = _mismatch(new, ref, ulps)
        k = int(mask.sum())
        if k and not first:
            first = describe_mismatch(W, G, new, ref, lr, eps, int(mask.nonzero()[0, 0]))
        root = sqrt_inexact(G)
        bad, done, c = bad + k, done + m, c + 1
        inexact, unexplained = inexact + int(root.sum()), unexplained + int((mask & ~root).sum())
    return SignSample(
        str(dtype).replace("torch.", ""), part, eps, done, bad, first, inexact, unexplained
    )


def _gradient_entries(dtype: torch.dtype, part: str):
    lo, hi = band_limits(dtype)
    width = 64 if dtype == torch.float64 else 32
    fmax = float(torch.finfo(dtype).max)
    below_hi = (
        float(np.nextafter(np.float32(hi), np.float32(0)))
        if width == 32
        else float(np.nextafter(hi, 0))
    )
    if part == BANDS[0]:
        mags = st.one_of(
            st.just(0.0),
            st.floats(lo, below_hi, width=width),
            st.integers(*BAND_EXPONENTS[dtype]).map(
                lambda e: 2.0**e if e < BAND_EXPONENTS[dtype][1] else below_hi
            ),
        )
    else:
        mags = st.one_of(
            st.floats(hi, fmax, width=width),
            st.floats(2.0 ** _EMIN_SUB[dtype], lo, width=width, exclude_max=True),
        )
    return st.tuples(st.booleans(), mags).map(lambda t: -t[1] if t[0] else t[1])


def make_smoothed_sign(
    caller: SignCaller,
    dtype: torch.dtype,
    device: torch.device,
    *,
    eps: float,
    part: str,
    ulps: int = 0,
    samples: int = 4096,
    seed: int = 0,
):
    """``(examples, sampled)`` of one (band part, dtype, device) cell: a hypothesis test on small
    tensors (shrunk to a minimal counterexample; the caller applies its settings) and a check of a
    seeded vectorized sample of ``samples`` gradients (`sample_smoothed_sign`); each raises
    AssertionError."""
    w_elems = st.floats(
        -16, 16, allow_nan=False, allow_infinity=False, width=64 if dtype == torch.float64 else 32
    )

    @given(
        st.integers(1, 6).flatmap(
            lambda n: st.tuples(
                hnp.arrays(np.float64, (n,), elements=w_elems),
                hnp.arrays(np.float64, (n,), elements=_gradient_entries(dtype, part)),
                st.sampled_from(LRS),
            )
        )
    )
    def smoothed_sign(case):
        W = torch.from_numpy(case[0]).to(device=device, dtype=dtype)
        G = torch.from_numpy(case[1]).to(device=device, dtype=dtype)
        lr = case[2]
        new = _call(caller, W, G, lr, eps)
        mask = _mismatch(new, smoothed_sign_reference(W, G, lr, eps), ulps)
        if mask.any():
            i = int(mask.nonzero()[0, 0])
            ref = smoothed_sign_reference(W, G, lr, eps)
            more = f" (more than {ulps} ulps)" if ulps else ""
            raise AssertionError(
                f"smoothed_sign fails ({part}): "
                f"{describe_mismatch(W, G, new, ref, lr, eps, i)}{more}"
            )

    def sampled():
        if samples:
            s = sample_smoothed_sign(
                caller.fn,
                kind=caller.kind.value,
                dtype=dtype,
                n=samples,
                eps=eps,
                part=part,
                ulps=ulps,
                seed=seed,
                device=str(device),
            )
            if s.mismatches:
                raise AssertionError(
                    f"smoothed_sign fails ({part}): {s.mismatches} of {s.checked} sampled "
                    f"gradients differ; first: {s.first}"
                )

    return smoothed_sign, sampled


def _call(caller: SignCaller, W, G, lr, eps):
    try:
        out = caller.step(W, G, lr, eps)
    except (KitUsageError, AssertionError):
        raise
    except Exception as exc:  # noqa: BLE001 - any crash of user code is a finding
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise AssertionError(
            f"smoothed_sign fails: the update raised {type(exc).__name__}: {first}"
        ) from None
    if out.shape != W.shape:
        raise AssertionError(
            f"smoothed_sign: the update returned shape {tuple(out.shape)} for W of shape "
            f"{tuple(W.shape)}"
        )
    return out
