"""The model-call cache in Redis, shared by every process of a deployment.

A `CacheStore` (calls/cache.py) whose entries are Redis strings under one prefix, each kept
for `ttl_s` after it was written (Redis evicts, no size bookkeeping here). It is also an
`AsyncCacheStore`: a run's lookups go through the running loop's asyncio client, with no hop to
a thread (the synchronous calls serve LangChain's synchronous path and `clear`). When Redis
cannot be reached, lookups miss and writes are dropped (the model answers instead), and the
store says so once.
"""

from __future__ import annotations

import logging
from typing import Any

from app.backends.redis_clients import LoopClients

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "plantree:model-cache"
DEFAULT_TTL_S = 7 * 24 * 3600


class RedisCacheStore:
    """Cached replies as Redis strings with an expiry."""

    def __init__(
        self, url: str, *, prefix: str = DEFAULT_PREFIX, ttl_s: int = DEFAULT_TTL_S
    ) -> None:
        import redis

        self._client: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._clients = LoopClients(url, socket_timeout=2, socket_connect_timeout=2)
        self._prefix = prefix
        self._ttl_s = ttl_s
        self._failing = False

    def _key(self, key: str) -> str:
        return f"{self._prefix}:{key}"

    def _failed(self, e: Exception) -> None:
        if not self._failing:
            logger.warning("model cache: redis unreachable (%s); calling the model", e)
        self._failing = True

    def get(self, key: str) -> str | None:
        try:
            value = self._client.get(self._key(key))
        except Exception as e:
            self._failed(e)
            return None
        self._failing = False
        return value.decode() if isinstance(value, bytes) else value

    def put(self, key: str, value: str) -> None:
        try:
            self._client.set(self._key(key), value, ex=self._ttl_s)
        except Exception as e:
            self._failed(e)

    async def aget(self, key: str) -> str | None:
        try:
            value = await self._clients.get().client.get(self._key(key))
        except Exception as e:
            self._failed(e)
            return None
        self._failing = False
        return value.decode() if isinstance(value, bytes) else value

    async def aput(self, key: str, value: str) -> None:
        try:
            await self._clients.get().client.set(self._key(key), value, ex=self._ttl_s)
        except Exception as e:
            self._failed(e)

    def clear(self) -> None:
        keys = list(self._client.scan_iter(match=f"{self._prefix}:*", count=1000))
        for start in range(0, len(keys), 1000):
            self._client.delete(*keys[start : start + 1000])

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """Close the running loop's asyncio client (the synchronous one: `close`)."""
        await self._clients.aclose()
