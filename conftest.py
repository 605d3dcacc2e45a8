"""Repository-wide pytest configuration: hypothesis profiles (default, ci, slow), skipping ``gpu``
tests when CUDA is unavailable, and the process-wide settings each test gets back (terminal width,
torch's thread count and determinism flags, mpmath's precision), so that no test depends on the
order the suite runs in or on the shell it was started from."""

from __future__ import annotations

import os
import sys

import pytest

try:  # hypothesis profiles, registered once for the whole suite (select with HYPOTHESIS_PROFILE)
    from hypothesis import HealthCheck, settings

    settings.register_profile("default", deadline=None)
    # CI: derandomized (the same examples every run), so a red CI is reproducible locally with
    # HYPOTHESIS_PROFILE=ci; hypothesis would load its own "ci" profile when CI is set, this replaces it
    settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("slow", deadline=None, max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))
except ImportError:  # pragma: no cover - the base install has no hypothesis
    pass


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is false)")
        for item in gpu_items:
            item.add_marker(skip)


def _torch_settings(torch) -> tuple[int, bool, bool]:
    return (
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


@pytest.fixture(autouse=True)
def _process_settings(monkeypatch):
    """No inherited ``COLUMNS`` (argparse and the reports wrap to it); torch's thread count and
    determinism flags and mpmath's precision restored after each test that changed them (the
    in-process ``mdcert study`` sets one thread and deterministic algorithms, as its runs need)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    torch = sys.modules.get("torch")
    saved = _torch_settings(torch) if torch is not None else None
    mp = sys.modules.get("mpmath")
    dps = mp.mp.dps if mp is not None else None
    yield
    if saved is not None and _torch_settings(torch) != saved:
        torch.set_num_threads(saved[0])
        torch.use_deterministic_algorithms(saved[1], warn_only=saved[2])
    if dps is not None and sys.modules["mpmath"].mp.dps != dps:
        sys.modules["mpmath"].mp.dps = dps
