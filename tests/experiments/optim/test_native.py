"""Tests of the streaming C kernel of the fused step (`experiments.optim.native`).

Its contract is inductor's loop's (`experiments.optim.fused.step_kernel`), so it is checked against
that loop bit for bit (both written values, signed zeros, subnormals, overflow), at every recipe it
has and both dtypes, for every thread count and for misaligned views; then its failures: no recipe
(``exp2``), no compiler, disabled, bad arguments. The kernels build in about half a second each.
"""

from __future__ import annotations

import math
import os
import shutil
from fractions import Fraction

import numpy as np
import pytest
import torch
from tests.experiments.optim.helpers import skip_without_kernel

import experiments.optim.fused as fused_mod
from experiments.optim import native
from experiments.optim.fused import KernelUnavailable, _recipe, bits_of
from experiments.optim.native import NativeKernel, NativeUnavailable, native_kernel

# exponent e = 1/(p-1): integer (p = 1.1, 1.25), cube root (1.75, 1.3, 4), its square (2.5),
# square roots (3), roots with a whole part (13/8: p = 21/13)
EXPONENTS = ["10", "4", "4/3", "10/3", "1/3", "2/3", "1/2", "13/8"]
DEFAULT = {("4/3", torch.float32), ("1/2", torch.float32)}


def _native_or_skip(e, dtype, *, fma=True) -> NativeKernel:
    try:
        return native_kernel(_recipe(Fraction(e)), dtype, fma=fma)
    except NativeUnavailable as exc:  # pragma: no cover - depends on the machine's toolchain
        skip_without_kernel(f"no streaming kernel here: {exc}")


def _inductor_or_skip(e, dtype):
    try:
        return fused_mod.step_kernel(Fraction(e), dtype, backend="inductor")
    except KernelUnavailable as exc:  # pragma: no cover
        skip_without_kernel(f"no compiled kernel here: {exc}")


def _inputs(n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    info = torch.finfo(dtype)
    q = torch.randn(n, generator=g, dtype=torch.float64) * torch.exp(
        torch.randn(n, generator=g, dtype=torch.float64) * 8
    )
    q = q.to(dtype)
    special = [0.0, -0.0, info.tiny / 64, -info.tiny * 3, info.tiny, 1.0, -8.0, info.max / 4]
    q[: len(special)] = torch.tensor(special, dtype=dtype)
    grad = torch.randn(n, generator=g, dtype=dtype)
    grad[: len(special)] = 0.0
    return q, grad


def _run(kernel, q, g, coef=-0.01):
    q_out, w = torch.empty_like(q), torch.empty_like(q)
    top = kernel(q, q_out, w, g, torch.tensor(coef, dtype=torch.float64))
    return float(top), q_out, w


# the default run compares the exponents whose inductor loops other tests compile anyway
# (p = 1.75, 3 in float32); the rest (a compile of about 10 s each) are slow
CASES = [
    pytest.param(e, dtype, marks=() if (e, dtype) in DEFAULT else pytest.mark.slow)
    for dtype in (torch.float32, torch.float64)
    for e in EXPONENTS
]


@pytest.mark.parametrize("e,dtype", CASES)
def test_same_bits_as_inductors_loop(e, dtype):
    """The unfused form (``fma=False``; the default differs only where `test_fused_multiply_adds`
    says) against inductor's loop."""
    nat, ind = _native_or_skip(e, dtype, fma=False), _inductor_or_skip(e, dtype)
    q, g = _inputs(70_001, dtype, seed=len(e))  # not a multiple of a block: a ragged tail
    a, b = _run(nat, q, g), _run(ind, q, g)
    assert torch.equal(bits_of(a[1]), bits_of(b[1])) and torch.equal(bits_of(a[2]), bits_of(b[2]))
    assert a[0] == b[0] or (math.isnan(a[0]) and math.isnan(b[0]))
    finite = torch.isfinite(a[2])
    if finite.all():
        assert a[0] == float(a[2].abs().max())
    else:
        assert not math.isfinite(a[0])


# float64 cube-root exponents and their bounds in units of 2^-52 (the float32 table of test_fused.py)
CBRT64 = [("4/3", 3), ("1/3", 3), ("2/3", 5), ("10/3", 6)]


@pytest.mark.parametrize("e,bound", CBRT64)
def test_fused_multiply_adds_keep_the_cube_root_within_its_bound_of_exact(e, bound):
    """The default float64 kernel fuses the cube root's ``x y + c`` where the CPU can: its bits may
    differ from the unfused form's (inductor's), so both are held to the exact power: ``y`` with
    ``(y(1 - k eps))^3 <= |x|^(3e) <= (y(1 + k eps))^3`` in rational arithmetic; elsewhere (signs,
    zeros, the maximum, the dual) the two agree bit for bit."""
    fused, plain = _native_or_skip(e, torch.float64), _native_or_skip(e, torch.float64, fma=False)
    assert plain.fused_madd is False
    q, g = _inputs(3_001, torch.float64, seed=7)
    (ta, qa, wa), (_, qb, wb) = _run(fused, q, g), _run(plain, q, g)
    assert torch.equal(bits_of(qa), bits_of(qb))
    assert torch.equal(torch.signbit(wa), torch.signbit(wb)) and torch.equal(wa == 0, wb == 0)
    assert torch.equal(torch.isfinite(wa), torch.isfinite(wb))
    assert ta == float(wa.abs().max()) or not math.isfinite(ta)
    eps, cube = Fraction(2.0**-52), 3 * Fraction(e)
    ok = torch.isfinite(wa) & (wa.abs() > torch.finfo(torch.float64).tiny)
    for x, y in zip(qa[ok].abs().tolist(), wa[ok].abs().tolist()):
        target, Y = Fraction(x) ** cube.numerator, Fraction(y)
        assert (Y * (1 - bound * eps)) ** 3 <= target <= (Y * (1 + bound * eps)) ** 3, (x, y)
    if not fused.fused_madd:  # pragma: no cover - a CPU without fused multiply-adds
        assert torch.equal(bits_of(wa), bits_of(wb))


@pytest.mark.parametrize("e", ["4/3", "10"])
def test_every_thread_count_and_misaligned_views_give_the_same_bits(e, monkeypatch):
    kernel = _native_or_skip(e, torch.float32)
    q, g = _inputs(200_003, torch.float32, seed=3)
    runs = []
    for threads in (1, 2, 3, 5):
        monkeypatch.setattr(torch, "get_num_threads", lambda t=threads: t)
        runs.append(_run(kernel, q, g))
    for top, q_out, w in runs[1:]:
        assert top == runs[0][0]
        assert torch.equal(bits_of(q_out), bits_of(runs[0][1]))
        assert torch.equal(bits_of(w), bits_of(runs[0][2]))
    monkeypatch.undo()
    # destinations one entry off a cache line (views into larger buffers): same values
    big_q, big_w = torch.empty(q.numel() + 1), torch.empty(q.numel() + 3)
    q_out, w = big_q[1:], big_w[3:]
    top = kernel(q, q_out, w, g, torch.tensor(-0.01, dtype=torch.float64))
    assert top == runs[0][0] and torch.equal(bits_of(w), bits_of(runs[0][2]))
    assert torch.equal(bits_of(q_out), bits_of(runs[0][1]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_non_finite_entries_anywhere_give_a_non_finite_maximum(dtype):
    kernel = _native_or_skip("4/3", dtype)
    n = 65_536 * 2 + 129  # two threads' blocks and a tail
    q, g = _inputs(n, dtype, seed=4)
    for where in (0, 127, 128, 65_535, n - 1):
        for bad in (math.nan, math.inf, -math.inf):
            g2 = g.clone()
            g2[where] = bad
            top, _, _ = _run(kernel, q, g2)
            assert not math.isfinite(top)
            if math.isnan(bad):
                assert math.isnan(top)
    q2 = q.clone()
    q2[n // 3] = torch.finfo(dtype).max  # the dual overflows by the step (coef g ~ max)
    g2 = g.clone()
    g2[n // 3] = torch.finfo(dtype).max  # max + max: an infinite dual is reported as NaN
    assert math.isnan(_run(kernel, q2, g2, coef=1.0)[0])


def test_inverse_map_with_minus_zero_coefficient_is_bit_exact():
    kernel = _native_or_skip("4/3", torch.float32)
    q, g = _inputs(10_000, torch.float32, seed=5)
    _, q_out, w = _run(kernel, q, g)
    _, q0, w0 = _run(kernel, q_out, torch.zeros_like(q), coef=-0.0)
    assert torch.equal(bits_of(q0), bits_of(q_out)) and torch.equal(bits_of(w0), bits_of(w))


def test_exp2_exponents_have_no_streaming_kernel_and_auto_falls_back():
    with pytest.raises(NativeUnavailable, match="no exp2 recipe"):
        native_kernel(_recipe(Fraction(7, 5)), torch.float32)
    with pytest.raises(NativeUnavailable, match="float32 and float64"):
        native_kernel(_recipe(Fraction(4, 3)), torch.float16)
    with pytest.raises(KernelUnavailable, match="no streaming kernel.*exp2"):
        fused_mod.step_kernel(Fraction(7, 5), torch.float32, backend="native")
    with pytest.raises(ValueError, match="backend must be"):
        fused_mod.step_kernel(Fraction(4, 3), torch.float32, backend="numba")


@pytest.mark.parametrize(
    "env,msg",
    [
        ({"MDCERT_NATIVE_KERNELS": "0"}, r"disabled by MDCERT_NATIVE_KERNELS=0"),
        ({"CC": "/nonexistent/cc"}, r"the C compiler '/nonexistent/cc' does not run"),
        ({"CC": "false"}, r"the C compiler 'false' does not run"),
    ],
)
def test_unavailable_toolchain_is_reported(env, msg, monkeypatch, tmp_path):
    monkeypatch.setenv("MDCERT_KERNEL_CACHE", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(NativeUnavailable, match=msg):
        native_kernel(_recipe(Fraction(4, 3)), torch.float32)
    assert list(tmp_path.iterdir()) == []


def test_a_compile_error_is_reported_in_one_line(monkeypatch, tmp_path):
    if not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")):
        skip_without_kernel("no C compiler here (the refusal without one is tested above)")
    monkeypatch.setenv("MDCERT_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "step_source", lambda recipe, dtype, **_: "this is not C;\n")
    with pytest.raises(NativeUnavailable, match=r"^the C compiler failed: [^\n]+$"):
        native_kernel(_recipe(Fraction(4, 3)), torch.float32)
    assert [p.name for p in tmp_path.iterdir()] == []  # no half-written kernel left


def test_the_built_kernel_is_cached_on_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("MDCERT_KERNEL_CACHE", str(tmp_path / "k"))
    kernel = _native_or_skip("1/2", torch.float64)
    files = sorted(p.name for p in (tmp_path / "k").iterdir())
    assert len(files) == 1 and files[0].startswith("step_") and files[0].endswith(".so")
    assert oct((tmp_path / "k").stat().st_mode & 0o777) == oct(0o700) or os.name != "posix"
    q, g = _inputs(1000, torch.float64, seed=6)
    _, _, w = _run(kernel, q, g)
    x = (q - 0.01 * g).numpy()
    # numpy's square root is correctly rounded, as C's is (torch's CPU sqrt is not always)
    assert torch.equal(w, torch.from_numpy(np.copysign(np.sqrt(np.abs(x)), x)))


@pytest.mark.parametrize(
    "bad",
    [
        lambda q: (q.double(), torch.empty_like(q), torch.empty_like(q), q),
        lambda q: (q, torch.empty(q.numel() - 1), torch.empty_like(q), q),
        lambda q: (q, torch.empty_like(q), torch.empty(2 * q.numel())[::2], q),
    ],
    ids=["dtype", "size", "strided"],
)
def test_bad_arguments_are_refused_before_anything_is_written(bad):
    kernel = _native_or_skip("4/3", torch.float32)
    q = torch.ones(100)
    args = bad(q)
    with pytest.raises(ValueError, match="contiguous CPU tensors of one dtype and size"):
        kernel(*args, torch.tensor(0.5, dtype=torch.float64))


def test_require_kernels_turns_the_skip_into_a_failure(monkeypatch):
    monkeypatch.setenv("MDCERT_REQUIRE_KERNELS", "1")
    with pytest.raises(pytest.fail.Exception, match="MDCERT_REQUIRE_KERNELS=1, but no kernel"):
        skip_without_kernel("no kernel")
    monkeypatch.delenv("MDCERT_REQUIRE_KERNELS")
    with pytest.raises(pytest.skip.Exception, match="no kernel"):
        skip_without_kernel("no kernel")
