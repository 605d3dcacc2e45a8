"""Repository-wide pytest configuration: hypothesis profiles (default, ci, slow) and skipping ``gpu``
tests when CUDA is unavailable."""

from __future__ import annotations

import os

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
