"""Repository-wide pytest configuration: skip ``gpu`` tests when CUDA is unavailable."""

from __future__ import annotations

import pytest


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
