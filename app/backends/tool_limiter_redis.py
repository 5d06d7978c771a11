"""The tools' rate limits shared by every process through Redis (`LATS_REDIS_URL`).

A tool's spacing is the in-process one's (`tools.runtime.RateLimiter`: a GCRA of one slot) with
its one number, the start of the tool's next free slot, kept in a Redis string per tool name.
The reservation runs as a Lua script on Redis's clock, atomically, so processes on different
hosts space one tool's calls together. The string expires once its slot has passed (it then
says nothing). The script runs through the process's Redis adapter (app/backends/redis.py):
while Redis is down (the adapter says so at once, logs the outage once and decides when to try
again), calls are spaced by the process's own limiter for that tool instead.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import KW_ONLY, dataclass

from app.backends.redis import LUA_DUE, RedisUnavailable, SharedRedis, shared_redis
from tools.runtime import Clock, LimiterRegistry, RateLimiter, Sleep

DEFAULT_PREFIX = "plantree:tool-rate"
NO_LIMIT_S = 1e18  # "wait as long as it takes" for the script (Lua cannot read "inf")

# KEYS: the tool's key. ARGV: interval, max wait (s). Returns {granted '1'|'0', start, now} as
# strings (Lua numbers would be cut to integers on the way out). A refusal writes nothing.
_RESERVE = (
    LUA_DUE
    + """
local interval = tonumber(ARGV[1])
local max_wait = tonumber(ARGV[2])
local function reply(granted)
  return {granted, string.format('%.6f', due), string.format('%.6f', now)}
end
if due - now > max_wait then return reply('0') end
keep(due + interval)
return reply('1')
"""
)


@dataclass(frozen=True, slots=True)
class Slot:
    """One reserved start of a tool call, read on one clock: Redis's, or the process's own
    monotonic one for a slot its in-process stand-in gave (`fallback`)."""

    start: float
    now: float
    fallback: bool = False

    @property
    def wait_s(self) -> float:
        """How long the caller waits for its start."""
        return max(0.0, self.start - self.now)


class RedisLink:
    """The reservation script, through the Redis adapter."""

    def __init__(self, redis: SharedRedis) -> None:
        self.redis = redis

    async def reserve(self, key: str, interval_s: float, max_wait_s: float) -> Slot | None:
        """The script's answer; raises `RedisUnavailable` while Redis is down."""
        granted, start, now = await self.redis.script(_RESERVE, [key], [interval_s, max_wait_s])
        return Slot(start=float(start), now=float(now)) if granted == b"1" else None

    async def aclose(self) -> None:
        """Close the running loop's connection."""
        await self.redis.aclose()


@dataclass(slots=True, eq=False)
class RedisRateLimiter:
    """Spaces the starts of one tool's calls at least `min_interval_s` apart across every
    process using the same Redis and key (a `ToolLimiter`, like the in-process `RateLimiter`,
    which stands in for it while Redis fails)."""

    link: RedisLink
    key: str
    name: str
    fallback: RateLimiter
    _: KW_ONLY
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep

    @property
    def min_interval_s(self) -> float:
        return self.fallback.min_interval_s

    @min_interval_s.setter
    def min_interval_s(self, value: float) -> None:
        self.fallback.min_interval_s = value

    async def reserve(self, max_wait_s: float = math.inf) -> Slot | None:
        """Take the next free slot without waiting for it; None (no slot taken) when it is
        more than `max_wait_s` away."""
        interval = self.min_interval_s
        if interval <= 0:
            now = self.clock()
            return Slot(start=now, now=now)
        limit = max_wait_s if math.isfinite(max_wait_s) else NO_LIMIT_S
        try:
            return await self.link.reserve(self.key, interval, limit)
        except RedisUnavailable:
            pass  # spaced in this process while Redis is down
        now = self.clock()
        wait = self.fallback.reserve(max_wait_s)
        return None if wait is None else Slot(start=now + wait, now=now, fallback=True)

    async def acquire(self, max_wait_s: float = math.inf) -> bool:
        """Wait for this call's slot; False (no slot taken) when it is over `max_wait_s` away."""
        slot = await self.reserve(max_wait_s)
        if slot is None:
            return False
        if slot.wait_s > 0:
            await self.sleep(slot.wait_s)
        return True


class RedisLimiterRegistry:
    """One `RedisRateLimiter` per tool name, all through one `RedisLink`, each with its
    in-process stand-in from a `LimiterRegistry` of the registry's own."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        redis: SharedRedis | None = None,
    ) -> None:
        self.link = RedisLink(redis or shared_redis(url))
        self.prefix = prefix
        self._clock = clock
        self._sleep = sleep
        self._fallback = LimiterRegistry(clock=clock, sleep=sleep)
        self._limiters: dict[str, RedisRateLimiter] = {}
        self._lock = threading.Lock()

    def limiter(self, name: str, min_interval_s: float) -> RedisRateLimiter:
        """The limiter for `name`, created on first use; the latest interval asked for wins.
        Nothing reaches Redis before the first call."""
        fallback = self._fallback.limiter(name, min_interval_s)
        with self._lock:
            limiter = self._limiters.get(name)
            if limiter is None:
                key = f"{self.prefix}:{name}"
                limiter = RedisRateLimiter(
                    self.link, key, name, fallback, clock=self._clock, sleep=self._sleep
                )
                self._limiters[name] = limiter
            return limiter

    def limiters(self) -> dict[str, RedisRateLimiter]:
        """The limiters made so far, by tool name (diagnostics and tests)."""
        with self._lock:
            return dict(self._limiters)

    async def aclose(self) -> None:
        """Close this loop's connection."""
        await self.link.aclose()


_shared: dict[str, RedisLimiterRegistry] = {}
_shared_lock = threading.Lock()


def redis_limiters(url: str, *, redis: SharedRedis | None = None) -> RedisLimiterRegistry:
    """The process's registry for the Redis at `url` (over `redis` when given), so every
    `build_tools` call of the process (every run) uses the same limiters, as `PROCESS_LIMITERS`
    does without Redis."""
    with _shared_lock:
        registry = _shared.get(url)
        if registry is None:
            registry = _shared[url] = RedisLimiterRegistry(url, redis=redis)
        return registry
