"""How often a tool's service is called: a rate limiter per tool (in the process, or shared
through Redis by the service: `app/backends/tool_limiter_redis.py`), and the tools marked down
for a while because their service was unreachable. `ToolRuntime` (tools/runtime.py) draws on
both."""

from __future__ import annotations

import asyncio
import copy
import math
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from calls.ratelimit import TokenBucket
from tools.results import ToolResult

Clock = Callable[[], float]
"""Monotonic seconds."""
Sleep = Callable[[float], Awaitable[None]]

DOWN_S = 30.0
"""How long a tool whose service was unreachable fails at once (`network` failures)."""


class ToolLimiter(Protocol):
    """What `ToolRuntime` needs of a tool's rate limiter: `RateLimiter` in-process, or
    `app.backends.tool_limiter_redis.RedisRateLimiter` shared through Redis."""

    @property
    def min_interval_s(self) -> float: ...

    async def acquire(self, max_wait_s: float = ...) -> bool: ...


class ToolLimiters(Protocol):
    """One limiter per tool name: `LimiterRegistry`, or `RedisLimiterRegistry`."""

    def limiter(self, name: str, min_interval_s: float) -> ToolLimiter: ...


class RateLimiter(TokenBucket):
    """Spaces the starts of one tool's calls at least `min_interval_s` apart (0: no spacing);
    a `TokenBucket` of one slot, safe across tasks, threads and event loops."""

    def __init__(self, min_interval_s: float, *, clock: Clock, sleep: Sleep) -> None:
        super().__init__(_rate(min_interval_s), 1, clock=clock, sleep=sleep)

    @property
    def min_interval_s(self) -> float:
        return 1.0 / self.rate

    @min_interval_s.setter
    def min_interval_s(self, value: float) -> None:
        self.set_rate(_rate(value))


def _rate(min_interval_s: float) -> float:
    return 1.0 / min_interval_s if min_interval_s > 0 else math.inf


class LimiterRegistry:
    """One `RateLimiter` per tool name; the process-wide registry is `PROCESS_LIMITERS`."""

    def __init__(self, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._limiters: dict[str, RateLimiter] = {}
        self._lock = threading.Lock()

    def limiter(self, name: str, min_interval_s: float) -> RateLimiter:
        """The limiter for `name`, created on first use; the latest interval asked for wins."""
        with self._lock:
            limiter = self._limiters.get(name)
            if limiter is None:
                limiter = RateLimiter(min_interval_s, clock=self._clock, sleep=self._sleep)
                self._limiters[name] = limiter
            limiter.min_interval_s = min_interval_s
            return limiter


class ToolOutages:
    """Tools whose service was unreachable, each until when: a call meanwhile fails at once
    with the observation of the call that found it down (see `ToolRuntime.run`)."""

    def __init__(self) -> None:
        self._down: dict[str, tuple[float, ToolResult]] = {}
        self._lock = threading.Lock()

    def current(self, name: str, now: float) -> ToolResult | None:
        with self._lock:
            down = self._down.get(name)
            if down is None or now >= down[0]:
                self._down.pop(name, None)
                return None
            return copy.deepcopy(down[1])

    def mark(self, name: str, until: float, result: ToolResult) -> None:
        with self._lock:
            self._down[name] = (until, copy.deepcopy(result))

    def clear(self) -> None:
        with self._lock:
            self._down.clear()


# Shared by every run (and every `build_tools` call) in the process, so that two concurrent runs
# cannot call one service twice as fast (and one run's finding that a service is unreachable
# spares the others the wait).
PROCESS_LIMITERS = LimiterRegistry()
PROCESS_OUTAGES = ToolOutages()
