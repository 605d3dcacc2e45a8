"""Tests of the optimizer-state buffers on transparent huge pages (`experiments.optim.buffers`).

The advice changes no value, so: the span arithmetic by table and by property, the buffers' shape
and independence, the opt-out, and, where the kernel accepts the advice, that the buffer's mapping
carries it (``VmFlags: hg`` in ``/proc/self/smaps``). Whether the kernel then grants huge pages
depends on its defragmentation setting and free memory (a CI machine granted none), so no test
asserts a grant."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from experiments import LpMirrorDescent
from experiments.optim.buffers import (
    HUGE_MIN_BYTES,
    HUGE_PAGE,
    advise_huge_pages,
    huge_bytes,
    huge_page_span,
    mapping_flags,
    state_buffer,
)

MB2 = HUGE_PAGE


@pytest.mark.parametrize(
    "ptr,nbytes,span",
    [
        (0, MB2, (0, MB2)),
        (0, MB2 - 1, None),
        (1, 2 * MB2, (MB2, MB2)),
        (MB2 - 64, 3 * MB2, (MB2, 2 * MB2)),
        (5 * MB2 + 16, MB2, None),
        (7, 0, None),
    ],
)
def test_huge_page_span_table(ptr, nbytes, span):
    assert huge_page_span(ptr, nbytes) == span


@given(st.integers(0, 1 << 40), st.integers(0, 1 << 30))
@example(MB2 - 1, MB2 + 2)
def test_huge_page_span_is_the_whole_aligned_pages_inside(ptr, nbytes):
    span = huge_page_span(ptr, nbytes)
    if span is None:  # no whole 2 MiB page fits
        first = -(-ptr // MB2) * MB2
        assert first + MB2 > ptr + nbytes
        return
    start, length = span
    assert start % MB2 == 0 and length % MB2 == 0 and length > 0
    assert ptr <= start and start + length <= ptr + nbytes
    assert start - ptr < MB2 and (ptr + nbytes) - (start + length) < MB2


@pytest.mark.parametrize("numel", [10, HUGE_MIN_BYTES // 8 + 1001])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_state_buffer_is_a_new_contiguous_tensor_like_its_model(numel, dtype):
    like = torch.randn(numel, 2, dtype=dtype).t()  # not contiguous
    out = state_buffer(like)
    assert out.shape == like.shape and out.dtype == dtype and out.device == like.device
    assert out.is_contiguous() and out.data_ptr() != like.data_ptr()
    out.fill_(3.0)
    assert bool((out == 3).all()) and not bool((like == 3).all())


def _thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unknown"
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else "unknown"


def _kernel_takes_advice() -> bool:
    """Whether this kernel accepts the advice on a fresh 4 MiB-aligned probe (the tests' premise)."""
    probe = torch.empty(3 * HUGE_PAGE // 8, dtype=torch.float64)
    return advise_huge_pages(probe)


def test_small_or_unaligned_storage_takes_no_advice():
    assert advise_huge_pages(torch.empty(HUGE_PAGE // 8 - 1, dtype=torch.float64)) is False
    assert advise_huge_pages(torch.empty(0)) is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise, smaps: Linux")
def test_large_buffers_carry_the_huge_page_advice_and_the_opt_out_carries_none(monkeypatch):
    if not _kernel_takes_advice():
        pytest.skip(f"this kernel refuses MADV_HUGEPAGE (transparent huge pages {_thp_mode()!r})")
    n = 6 * HUGE_MIN_BYTES // 8  # 48 MiB: above glibc's mmap threshold, a mapping of its own
    out = state_buffer(torch.empty(n, dtype=torch.float64))
    out.fill_(1.0)  # the first touch, after the advice
    flags = mapping_flags(out)
    assert flags is not None and "hg" in flags
    got = huge_bytes(out)  # granted or not: the kernel's choice, but a readable, sane number
    assert got is not None and 0 <= got <= out.nbytes + HUGE_PAGE
    monkeypatch.setenv("MDCERT_HUGE_PAGES", "0")
    plain = state_buffer(torch.empty(n, dtype=torch.float64))
    plain.fill_(1.0)
    assert "hg" not in (mapping_flags(plain) or set())
    if _thp_mode() == "madvise":  # without the advice, nothing asks for huge pages
        assert huge_bytes(plain) == 0


def test_the_dual_carries_the_advice_and_the_advice_changes_no_result():
    """The fused optimizer's dual comes from `state_buffer` (advised onto huge pages), and its steps
    give the same bits with the advice off (MDCERT_HUGE_PAGES=0)."""
    n = 6 * HUGE_MIN_BYTES // 4 + 17  # 48 MiB: above glibc's mmap threshold, fresh pages
    w0 = torch.randn(n, generator=torch.Generator().manual_seed(0))
    g = torch.randn(n, generator=torch.Generator().manual_seed(1))
    advised = sys.platform.startswith("linux") and _kernel_takes_advice()
    outs = []
    for env in ("1", "0"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MDCERT_HUGE_PAGES", env)
            param = torch.nn.Parameter(w0.clone())
            param.grad = g.clone()
            opt = LpMirrorDescent([param], lr=1e-3, p="1.75", fused=True)
            for _ in range(3):
                opt.step()
            outs.append(param.detach().clone())
            dual = opt.state[param]["dual"]
            assert dual.is_contiguous()
            if advised:
                assert ("hg" in (mapping_flags(dual) or set())) == (env == "1")
    assert torch.equal(outs[0], outs[1])
