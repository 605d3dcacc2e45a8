"""Tests of the write phase's thread count (`experiments.optim.threads`): the chunking that makes the
result independent of it (bit for bit), the automatic choice (with a simulated clock: nothing here
asserts a real timing) and the override."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from tests.experiments.optim.helpers import skip_without_kernel

import experiments.optim.fused as fused_mod
from experiments.optim.native import NativeKernel
from certify.errors import MdcertError
from experiments import LpMirrorDescent
from experiments.optim.kernels import CHUNK
from experiments.optim.threads import GRAIN, PROBE, ThreadChoice, chunk_bounds

N = CHUNK + 3 * GRAIN + 4321  # a full chunk, whole grains and a ragged tail


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [0, 1, 100, GRAIN, GRAIN + 1, N, 10_000_000, 5 * GRAIN + 12345])
@pytest.mark.parametrize("t", [1, 2, 3, 4, 5, 7, 8, 16, 33, 64])
def test_chunk_bounds_cover_the_range_and_split_evenly(n, t):
    bounds = chunk_bounds(n, t, chunk=CHUNK)
    assert [s for s, _ in bounds[1:]] == [e for _, e in bounds[:-1]]
    assert (bounds[0][0], bounds[-1][1]) == (0, n) if n else bounds == []
    for i, (s, e) in enumerate(bounds):
        assert e - s <= CHUNK
        k, rest = divmod(e - s, GRAIN)
        if rest:  # only the last piece, below GRAIN (one thread)
            assert k == 0 and i == len(bounds) - 1
        else:  # every thread gets whole grains
            assert k <= t or k % t == 0
    assert chunk_bounds(40, 2, chunk=16) == [(0, 16), (16, 32), (32, 40)]


def _run(threads, p, dtype=torch.float32, fused=None, n=N, **flags):
    g = torch.Generator().manual_seed(5)
    param = torch.nn.Parameter(torch.randn(n, generator=g, dtype=dtype))
    opt = LpMirrorDescent([param], lr=0.05, p=p, threads=threads, fused=fused, **flags)
    for _ in range(3):
        param.grad = torch.randn(n, generator=g, dtype=dtype)
        opt.step()
    try:
        built = fused_mod.step_kernel(Fraction(4, 3), dtype)
    except fused_mod.KernelUnavailable:  # no compiler here: fused=True warned and ran eagerly
        built = None
    native = isinstance(built, NativeKernel)
    keeps = fused and built is not None and (not native or threads is None)  # the writes' count
    assert opt._threads.last == (torch.get_num_threads() if keeps else threads)
    dual = opt.state[param].get("dual")
    return param.detach().clone(), None if dual is None else dual.clone()


def _same(a, b) -> bool:
    return torch.equal(a[0], b[0]) and (a[1] is None or torch.equal(a[1], b[1]))


@pytest.mark.parametrize("p", ["1.1", "1.75", "4", "2.5", "2"])
@pytest.mark.parametrize(
    "flags", [{}, {"cache_dual": False}, {"normalize_gradient": True, "maximize": True}]
)
def test_eager_results_are_bit_identical_for_every_thread_count(p, flags, two_threads):
    """The generic exponents (``exp2``/``log2``, whose scalar and vector code round differently) are
    the ones that differed before the chunks were aligned to the thread split."""
    one = _run(1, p, **flags)
    assert _same(one, _run(2, p, **flags)) and _same(one, _run(3, p, **flags))


def test_float64_bit_identical(two_threads):
    n = GRAIN * 5 + 7
    assert _same(_run(1, "1.3", torch.float64, n=n), _run(2, "1.3", torch.float64, n=n))


def test_fused_results_are_bit_identical_for_every_thread_count(two_threads):
    """An inductor loop keeps torch's count (`_run` checks it; another would recompile the loop);
    its result does not depend on that count either (its tail is masked, vectorized). The streaming
    kernel (the default where it builds) takes the optimizer's count, with the same bits."""
    try:
        kernel = fused_mod.step_kernel(Fraction(4, 3), torch.float32)
    except fused_mod.KernelUnavailable as exc:  # pragma: no cover - depends on the toolchain
        skip_without_kernel(str(exc))
    runs = []
    for t in (1, 2, 3):
        if isinstance(kernel, NativeKernel):
            runs.append(_run(t, "1.75", fused=True))
        torch.set_num_threads(t)
        runs.append(_run(1, "1.75", fused=True))
    assert all(_same(runs[0], run) for run in runs[1:])


def test_streaming_fused_steps_keep_torchs_count_unless_fixed(two_threads):
    """The C kernel's blocks go to whichever thread is free, so the automatic choice leaves it at
    torch's count; ``threads=k`` still fixes k (and the bits are the same either way)."""
    try:
        kernel = fused_mod.step_kernel(Fraction(4, 3), torch.float32)
    except fused_mod.KernelUnavailable as exc:  # pragma: no cover - no compiler here
        skip_without_kernel(str(exc))
    if not isinstance(kernel, NativeKernel):  # pragma: no cover - no C compiler here
        skip_without_kernel("no streaming kernel here")
    auto = _run(None, "1.75", fused=True)  # `_run` asserts the count the writes ran with
    assert _same(auto, _run(1, "1.75", fused=True))


class _Clock:
    """Simulated wall clock: a commit advances it by ``cost[threads in use]``."""

    def __init__(self, cost):
        self.now, self.cost, self.used = 0.0, cost, []

    def __call__(self):
        return self.now

    def commit(self):
        k = torch.get_num_threads()
        self.used.append(k)
        self.now += self.cost[k]


def test_automatic_choice_follows_the_faster_count(two_threads):
    clock = _Clock({1: 3.0, 2: 1.0})
    choice = ThreadChoice(clock=clock)
    for _ in range(3 * PROBE):
        choice.run([clock.commit], 10**7)
        assert torch.get_num_threads() == 2  # restored after every step
    assert clock.used[:3] == [2, 2, 1]  # untimed first step, then each candidate once
    assert clock.used.count(1) == 1  # then 2 (the first probe of 1 comes after 3 * PROBE steps)
    clock.cost = {1: 1.0, 2: 5.0}  # load arrives: two threads now slower
    for _ in range(4 * PROBE):
        choice.run([clock.commit], 10**7)
    tail = clock.used[-PROBE:]
    assert tail.count(1) >= PROBE - 1  # settled on one thread, probing two now and then


def test_probes_of_a_much_slower_count_are_rare(two_threads):
    clock = _Clock({1: 20.0, 2: 1.0})
    choice = ThreadChoice(clock=clock)
    for _ in range(400):
        choice.run([clock.commit], 10**7)
    probes = clock.used.count(1)
    assert probes <= 3  # the measurement, the first probe, one after 20 * PROBE steps
    assert probes * 20.0 <= 400 * 1.0 / PROBE + 2 * 20.0  # about 1/PROBE of the time, at most


def test_small_steps_and_one_thread_never_switch(two_threads):
    clock = _Clock({1: 1.0, 2: 9.0})
    choice = ThreadChoice(clock=clock)
    for _ in range(5):
        choice.run([clock.commit], 2 * GRAIN - 1)
    assert clock.used == [2] * 5 and not choice.timings
    torch.set_num_threads(1)
    choice.run([clock.commit], 10**7)
    assert clock.used[-1] == 1 and not choice.timings


def test_override_and_restore_after_an_error(two_threads):
    clock = _Clock({1: 1.0, 2: 1.0, 3: 1.0})
    choice = ThreadChoice(3, clock=clock)

    def failing():
        raise FloatingPointError("boom")

    with pytest.raises(FloatingPointError):
        choice.run([clock.commit, failing], 10)
    assert clock.used == [3] and torch.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", torch.tensor(0.5)])
def test_invalid_threads_refused(bad):
    with pytest.raises(MdcertError, match="Invalid threads"):
        LpMirrorDescent([torch.nn.Parameter(torch.ones(3))], lr=0.1, p="1.75", threads=bad)


def test_threads_accepts_integer_like_counts():
    import numpy as np

    opt = LpMirrorDescent(
        [torch.nn.Parameter(torch.ones(3))], lr=0.1, p="1.75", threads=np.int64(2)
    )
    assert opt._threads.threads == 2 and type(opt._threads.threads) is int


def test_checks_follow_the_choice_only_where_they_cannot_change_the_result(
    two_threads, monkeypatch
):
    """Bounds (`_gmax`) run under the chosen count on the chunked path; the q-norm of
    ``normalize_gradient`` (a reduction whose rounding reaches the step) keeps torch's count."""
    import experiments.optim.cpu as cpu_mod

    bounds, norms = [], []
    real_gmax, real_unit = LpMirrorDescent._gmax, cpu_mod.dual_unit

    def gmax(self, *args):
        bounds.append(torch.get_num_threads())
        return real_gmax(self, *args)

    def unit(*args):
        norms.append(torch.get_num_threads())
        return real_unit(*args)

    monkeypatch.setattr(LpMirrorDescent, "_gmax", gmax)
    monkeypatch.setattr(cpu_mod, "dual_unit", unit)
    _run(1, "1.75")
    _run(1, "1.75", normalize_gradient=True)
    assert bounds == [1, 1, 1] and norms == [2, 2, 2]
