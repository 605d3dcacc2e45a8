"""Tests of the optimizer-state buffers on transparent huge pages (`experiments.optim.buffers`).

The advice itself is not observable as a result (no value changes), so: the span arithmetic by
table and by property, the buffers' shape and independence, the opt-out, and, where the kernel
has transparent huge pages on, that a large buffer really lands on them (``/proc/self/smaps``)."""

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
    huge_bytes,
    huge_page_span,
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="transparent huge pages: Linux")
def test_large_buffers_land_on_huge_pages_where_the_kernel_allows(monkeypatch):
    if _thp_mode() not in ("always", "madvise"):
        pytest.skip(f"transparent huge pages are {_thp_mode()!r} here")
    n = 4 * HUGE_MIN_BYTES // 8
    out = state_buffer(torch.empty(n, dtype=torch.float64))
    out.fill_(1.0)  # the first touch, after the advice
    got = huge_bytes(out)
    assert got is not None and got >= HUGE_PAGE  # at least one 2 MiB page
    monkeypatch.setenv("MDCERT_HUGE_PAGES", "0")
    plain = state_buffer(torch.empty(n, dtype=torch.float64))
    plain.fill_(1.0)
    if _thp_mode() == "madvise":  # without the advice, nothing asks for huge pages
        assert huge_bytes(plain) == 0


def test_the_dual_is_on_huge_pages_and_the_advice_changes_no_result():
    """The fused optimizer's dual comes from `state_buffer` (on huge pages where the kernel allows),
    and its steps give the same bits with the advice off (MDCERT_HUGE_PAGES=0)."""
    n = 6 * HUGE_MIN_BYTES // 4 + 17  # 48 MiB: above glibc's mmap threshold, fresh pages
    w0 = torch.randn(n, generator=torch.Generator().manual_seed(0))
    g = torch.randn(n, generator=torch.Generator().manual_seed(1))
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
            if env == "1" and _thp_mode() in ("always", "madvise"):
                assert (huge_bytes(dual) or 0) >= HUGE_PAGE
    assert torch.equal(outs[0], outs[1])
