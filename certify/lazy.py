"""PEP 562 lazy exports for a package ``__init__``: each public name is imported from its defining
module on first access (then cached in the package namespace), so importing the package stays cheap.
Used by `certify` (the trusted checker must not pull in solver modules) and `experiments` (the CLI
starts without torch).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module-level ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's name (for the AttributeError message).
        exports: public name -> defining module.
        namespace: the package's ``globals()`` (a loaded name is stored there).
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
