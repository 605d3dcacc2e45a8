"""PEP 562 lazy exports for a package ``__init__``: each public name is imported from its defining
module on first access (then cached in the package namespace), so importing the package stays cheap.
Used by `certify` (the trusted checker must not pull in solver modules) and `experiments` (the CLI
starts without torch). `lazy_registry` does the same for a registry of named objects (sweep kinds,
study kinds), imported when first asked for.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["lazy_exports", "lazy_registry"]


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
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


def lazy_registry(what: str, entries: dict[str, str], cls: type) -> Callable[[str], Any]:
    """A lookup ``get(name)`` for a registry ``entries`` (name -> ``"module:ATTRIBUTE"``): the attribute
    is imported on first use, must be an instance of ``cls`` whose ``.name`` is ``name``, and is cached.
    ``entries`` is read at each call (a registry may grow). An unknown name is a one-line `MdcertError`
    (``unknown {what} 'x'; use one of ...``)."""
    from certify.errors import MdcertError

    loaded: dict[str, Any] = {}

    def get(name: str) -> Any:
        if not isinstance(name, str) or name not in entries:
            raise MdcertError(f"unknown {what} {name!r}; use one of {', '.join(entries)}")
        if name not in loaded:
            module, _, attr = entries[name].partition(":")
            obj = getattr(importlib.import_module(module), attr)
            if not isinstance(obj, cls) or obj.name != name:
                raise TypeError(
                    f"registry entry {entries[name]!r} is not the {cls.__name__} {name!r}"
                )
            loaded[name] = obj
        return loaded[name]

    return get
