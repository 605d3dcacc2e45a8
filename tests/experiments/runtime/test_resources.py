"""experiments.runtime.resources: work that cannot fit half of the memory is refused in one line, before it
starts, against certify.memory's reading of the memory limit."""

from __future__ import annotations

import pytest

import experiments.runtime.resources as res
from certify.errors import MdcertError


def test_work_within_half_the_limit_passes(monkeypatch) -> None:
    monkeypatch.setattr(res, "memory_limit", lambda: 8 << 30)
    res.check_memory(4 << 30, what="x", fix="y")
    res.check_memory(6 << 30, what="x", fix="y", fraction=0.75)


def test_work_over_half_the_limit_is_refused_in_one_line(monkeypatch) -> None:
    monkeypatch.setattr(res, "memory_limit", lambda: 8 << 30)
    with pytest.raises(MdcertError) as err:
        res.check_memory(5 << 30, what="200 trajectories", fix="reduce --trials")
    assert str(err.value) == (
        "200 trajectories would need about 5 GiB of memory, more than 50% of the 8 GiB "
        "available; reduce --trials"
    )


def test_an_unknown_limit_refuses_nothing(monkeypatch) -> None:
    monkeypatch.setattr(res, "memory_limit", lambda: None)
    res.check_memory(1 << 50, what="x", fix="y")


def test_the_limit_is_certify_memorys_reading() -> None:
    import certify.memory

    assert res.memory_limit is certify.memory.memory_limit
