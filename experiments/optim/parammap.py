"""A small identity-keyed map for the optimizer's per-parameter bookkeeping (docs/theory.md 2.3).

`LpMirrorDescent` keeps, per parameter, what it may not put into ``state`` (which ``state_dict``
saves): the stamp of its last write, the spare dual buffer, bounds, the p = 2 undo log. The keys
must be compared by identity (a tensor's ``==`` is elementwise) and must not be kept alive by the
map. `torch.utils.weak.WeakIdKeyDictionary` does both, but builds a weak reference object for every
lookup: about 10 us a call, five to ten calls a step, measured at 50 us of a 180 us step of a
65,536-entry parameter. `ParamMap` keys a plain dict by ``id(key)`` and keeps the weak reference
with the value; a lookup checks that the reference still points at the very same tensor (so an id
reused after the tensor died never matches), and the reference's callback drops the entry when the
tensor dies.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["ParamMap"]


class ParamMap:
    """``get`` / ``[key]`` / ``[key] = value`` / ``pop`` by object identity, without keeping the keys
    alive."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, key: object, default: Any = None) -> Any:
        entry = self._entries.get(id(key))
        if entry is not None and entry[0]() is key:
            return entry[1]
        return default

    def __getitem__(self, key: object) -> Any:
        entry = self._entries.get(id(key))
        if entry is None or entry[0]() is not key:
            raise KeyError("no entry for this tensor")
        return entry[1]

    def __setitem__(self, key: object, value: Any) -> None:
        ident, entries = id(key), self._entries
        entry = entries.get(ident)
        if entry is not None and entry[0]() is key:
            entries[ident] = (entry[0], value)
            return

        def forget(ref: weakref.ref, ident: int = ident) -> None:  # the key died
            current = entries.get(ident)
            if current is not None and current[0] is ref:
                del entries[ident]

        entries[ident] = (weakref.ref(key, forget), value)

    def pop(self, key: object, default: Any = None) -> Any:
        entry = self._entries.get(id(key))
        if entry is not None and entry[0]() is key:
            del self._entries[id(key)]
            return entry[1]
        return default

    def __contains__(self, key: object) -> bool:
        entry = self._entries.get(id(key))
        return entry is not None and entry[0]() is key

    def __len__(self) -> int:
        return sum(1 for ref, _ in self._entries.values() if ref() is not None)

    def values(self) -> list[Any]:
        """The values whose keys are alive."""
        return [value for ref, value in self._entries.values() if ref() is not None]
