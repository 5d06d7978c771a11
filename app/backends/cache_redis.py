"""The model-call cache in Redis, shared by every process of a deployment.

A `CacheStore` (calls/cache.py) whose entries are Redis strings under one prefix, each kept
for `ttl_s` after it was written (Redis evicts, no size bookkeeping here). It is also an
`AsyncCacheStore`: a run's lookups go through the running loop's asyncio client, with no hop to
a thread (the synchronous calls serve LangChain's synchronous path and `clear`). Every command
goes through the process's Redis adapter (app/backends/redis.py): while Redis is down, lookups
miss and writes are skipped (the model answers instead), at once and without a log line of
their own; the adapter logs the outage once.
"""

from __future__ import annotations

from typing import Any

from app.backends.redis import RedisUnavailable, SharedRedis, shared_redis

DEFAULT_PREFIX = "plantree:model-cache"
DEFAULT_TTL_S = 7 * 24 * 3600


class RedisCacheStore:
    """Cached replies as Redis strings with an expiry."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int = DEFAULT_TTL_S,
        redis: SharedRedis | None = None,
    ) -> None:
        self._redis = redis or shared_redis(url)
        self._prefix = prefix
        self._ttl_s = ttl_s

    def _key(self, key: str) -> str:
        return f"{self._prefix}:{key}"

    def get(self, key: str) -> str | None:
        try:
            value = self._redis.call_sync(lambda client: client.get(self._key(key)))
        except RedisUnavailable:
            return None
        return _text(value)

    def put(self, key: str, value: str) -> None:
        try:
            self._redis.call_sync(lambda client: client.set(self._key(key), value, ex=self._ttl_s))
        except RedisUnavailable:
            return

    async def aget(self, key: str) -> str | None:
        try:
            value = await self._redis.call(lambda client: client.get(self._key(key)))
        except RedisUnavailable:
            return None
        return _text(value)

    async def aput(self, key: str, value: str) -> None:
        try:
            await self._redis.call(lambda client: client.set(self._key(key), value, ex=self._ttl_s))
        except RedisUnavailable:
            return

    def clear(self) -> None:
        """Delete every entry (raises `RedisUnavailable` when Redis is down: nothing to
        degrade to)."""

        def clear(client: Any) -> None:
            keys = list(client.scan_iter(match=f"{self._prefix}:*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])

        self._redis.call_sync(clear)

    def close(self) -> None:
        self._redis.close()

    async def aclose(self) -> None:
        """Close the running loop's asyncio client (the synchronous one: `close`)."""
        await self._redis.aclose()


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
