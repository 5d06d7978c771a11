"""Redis clients for an object the whole process shares: one asyncio client, with its Lua
scripts registered, per running event loop (an asyncio client belongs to the loop that made
it; a process runs one loop in production, tests start one per test). Nothing connects until
the first command."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LoopClient:
    """The running loop's client and its scripts, in the order they were given."""

    client: Any
    scripts: tuple[Any, ...]


class LoopClients:
    """`get` the running loop's client (made on first use); `aclose` closes it."""

    def __init__(self, url: str, scripts: Sequence[str] = (), **options: Any) -> None:
        self.url = url
        self._sources = tuple(scripts)
        self._options = options
        self._lock = threading.Lock()
        self._made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopClient]
        self._made = weakref.WeakKeyDictionary()

    def get(self) -> LoopClient:
        import redis.asyncio as aioredis

        loop = asyncio.get_running_loop()
        with self._lock:
            made = self._made.get(loop)
            if made is None:
                client = aioredis.Redis.from_url(self.url, **self._options)
                scripts = tuple(client.register_script(source) for source in self._sources)
                made = self._made[loop] = LoopClient(client, scripts)
            return made

    async def aclose(self) -> None:
        """Close the running loop's client, if it made one."""
        with self._lock:
            made = self._made.pop(asyncio.get_running_loop(), None)
        if made is not None:
            await made.client.aclose()
