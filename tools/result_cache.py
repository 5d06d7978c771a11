"""The tools' result cache: a thread-safe in-memory LRU whose entries expire, keyed by tool,
the settings that change its answer, and the normalised query."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from tools.results import squash

V = TypeVar("V")
Clock = Callable[[], float]


class TtlCache(Generic[V]):
    """A thread-safe in-memory LRU cache whose entries expire; shared by every run in a process."""

    def __init__(self, *, max_entries: int = 2048, clock: Clock = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        """The live value under `key`, or None (an expired entry is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, value = entry
            if expires_at <= self._clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: V, ttl_s: float) -> None:
        """Store `value` for `ttl_s` seconds (nothing is stored when `ttl_s` <= 0)."""
        if ttl_s <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock() + ttl_s, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def cache_key(tool: str, scope: str, query: str, *, casefold: bool = True) -> str:
    """The cache key of one call: tool, the settings that change its answer, normalised query."""
    normalised = squash(query)
    if casefold:
        normalised = normalised.casefold()
    return f"{tool}\x1f{scope}\x1f{normalised}"
