"""experiments: mirror-descent optimizer and models, batched training paths, rates, plots, CLI.

Attributes are imported lazily (PEP 562) so that the CLI starts without importing torch.
"""

from __future__ import annotations

import importlib

#: public name -> defining module
_EXPORTS: dict[str, str] = {
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'experiments' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
