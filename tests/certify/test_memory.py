"""certify.memory: one cgroup-aware reading of the memory this process may use."""

from __future__ import annotations

import certify.memory as mem


def test_a_cgroup_limit_below_physical_memory_is_the_limit(tmp_path, monkeypatch) -> None:
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text(f"{1 << 30}\n")
    usage.write_text(f"{256 << 20}\n")
    monkeypatch.setattr(mem, "_CGROUP_LIMITS", (str(limit),))
    monkeypatch.setattr(mem, "_CGROUP_USAGE", (str(usage),))
    assert mem.memory_limit() == 1 << 30
    assert mem.available_bytes() <= (1 << 30) - (256 << 20)
    assert mem.default_budget() == int(0.8 * mem.available_bytes())


def test_no_cgroup_limit_reads_max_as_unlimited(tmp_path, monkeypatch) -> None:
    limit = tmp_path / "memory.max"
    limit.write_text("max\n")
    monkeypatch.setattr(mem, "_CGROUP_LIMITS", (str(limit), str(tmp_path / "absent")))
    assert mem.memory_limit() is None or mem.memory_limit() > 1 << 20  # physical memory only
    assert mem.default_budget() > 1 << 20


def test_format_bytes() -> None:
    assert mem.format_bytes(3 << 29) == "1.5 GiB" and mem.format_bytes(300 << 20) == "300 MiB"
