"""Process-wide memos of objects derived from live objects (a model copy, a structured-output
runnable, a compiled agent), keyed by the identities of what they derive from.

LangChain objects are not hashable and their equality is costly, but a derived object only
depends on the exact objects it was made from: an entry keeps those objects alive, so their ids
cannot be reused while it is cached. Bounded, least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """`get(owners, extra, make)`: the value made once for these exact `owners` (compared by
    identity) and this hashable `extra`, made by `make()` on a miss."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, tuple[tuple[object, ...], V]] = OrderedDict()

    def get(self, owners: tuple[object, ...], extra: Hashable, make: Callable[[], V]) -> V:
        key = (tuple(id(o) for o in owners), extra)
        entry = self._entries.get(key)
        if entry is None:
            entry = (owners, make())
            self._entries[key] = entry
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        return entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
