"""Per-key limits: requests per second (the token bucket of `calls.ratelimit`, asked without
waiting), open event streams, and queued plus
running runs. They apply to named keys, not to the admin key nor to the single user (no keys),
whom the process-wide run queue bounds. Request and stream counts are shared by every process
through Redis when `LATS_REDIS_URL` is set (app/backends/key_limits_redis.py), per process
without it or while Redis is down; the run count is the store's, checked and taken in the
transaction that creates the run, so it holds across processes and concurrent submits."""

from __future__ import annotations

import logging
import math
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import NoReturn, Protocol

from prometheus_client import Counter

from app.errors import ServiceError
from app.keys.tenancy import Caller
from app.store.base import TooManyOpen
from calls.ratelimit import TokenBucket

logger = logging.getLogger(__name__)

LIMITED = Counter(
    "plantree_key_limited",
    "Requests a per-key limit refused, by key name and limit (rate, streams, runs).",
    ["caller", "limit"],
)


class RateLimited(ServiceError, code="rate_limited"):
    """A per-key limit refused the request; retry after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: int, code: str = "rate_limited") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.code = code


class SharedKeyLimits(Protocol):
    """The request and stream counts every process shares (app/backends/key_limits_redis.py,
    handed in where the service is assembled); each check answers None while they are out of
    reach."""

    async def request(self, name: str, rps: float, burst: int) -> float | None:
        """0 when the key may make one more request now, else the seconds until it may."""
        ...

    async def take_stream(self, name: str, max_streams: int) -> str | bool | None:
        """A held slot's token, or False when the key has `max_streams` open."""
        ...

    def give_back(self, token: str) -> None:
        """Give back the slot `take_stream` handed out as `token`."""
        ...


class KeyLimits:
    """The limits by key name: request rate and open streams counted in this process, or
    across every process through `shared` (Redis) when given and up; runs counted by the
    store."""

    def __init__(
        self,
        *,
        rps: float,
        burst: int,
        max_streams: int,
        max_runs: int,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedKeyLimits | None = None,
    ) -> None:
        self._rps, self._burst, self._clock = rps, burst, clock
        self._max_streams = max_streams
        self._max_runs = max_runs
        self._shared = shared
        self._buckets: dict[str, TokenBucket] = {}
        self._streams: dict[str, int] = {}

    def _refuse(self, caller: Caller, limit: str, message: str, retry_after_s: float) -> NoReturn:
        LIMITED.labels(caller.label, limit).inc()
        logger.info("caller=%s refused by the %s limit", caller.label, limit)
        raise RateLimited(message, max(1, math.ceil(retry_after_s)), f"too_many_{limit}")

    async def request(self, caller: Caller) -> None:
        """Count one request; raises `RateLimited` beyond the key's rate."""
        if not caller.limited or caller.name is None:
            return
        wait = None
        if self._shared is not None:
            wait = await self._shared.request(caller.name, self._rps, self._burst)
        if wait is None:  # no Redis, or Redis is down: this process's bucket
            wait = self._local_request(caller.name)
        if wait > 0:
            self._refuse(caller, "requests", "too many requests for this key; slow down", wait)

    def _local_request(self, name: str) -> float:
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = TokenBucket(self._rps, self._burst, clock=self._clock)
            self._buckets[name] = bucket
        allowed, wait = bucket.try_reserve(0.0)
        return 0.0 if allowed else max(wait, 1e-6)

    def max_runs(self, caller: Caller) -> int | None:
        """The most unfinished runs the caller's key may have (None: no limit), for the store
        to check and take in one step (`store.runs.create(max_open=...)`)."""
        return self._max_runs if caller.limited else None

    def refuse_runs(self, caller: Caller, refused: TooManyOpen) -> NoReturn:
        """The store refused a run at the key's limit: the caller's `RateLimited`."""
        self._refuse(caller, "runs", str(refused), 5)

    async def stream_slot(self, caller: Caller) -> StreamSlot:
        """One of the key's event stream slots; raises `RateLimited` when all are taken."""
        name = caller.name
        if not caller.limited or name is None:
            return StreamSlot(None)
        full = f"this key already has {self._max_streams} streams open"
        shared = self._shared
        if shared is not None:
            token = await shared.take_stream(name, self._max_streams)
            if token is False:
                self._refuse(caller, "streams", full, 5)
            if isinstance(token, str):
                return StreamSlot(lambda: shared.give_back(token))
        if self._streams.get(name, 0) >= self._max_streams:
            self._refuse(caller, "streams", full, 5)
        self._streams[name] = self._streams.get(name, 0) + 1

        def give_back() -> None:
            self._streams[name] -= 1

        return StreamSlot(give_back)

    def open_streams(self, caller: Caller) -> int:
        """The key's streams counted in this process (Redis down or not configured)."""
        return self._streams.get(caller.name or "", 0)


class StreamSlot:
    """A key's hold on one open event stream, given back once."""

    def __init__(self, give_back: Callable[[], None] | None) -> None:
        self._give_back = give_back

    def release(self) -> None:
        give_back, self._give_back = self._give_back, None
        if give_back is not None:
            give_back()

    def hold(self, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """`frames`, holding the slot until they end or are dropped unread."""

        async def held() -> AsyncIterator[bytes]:
            try:
                async for chunk in frames:
                    yield chunk
            finally:
                self.release()

        wrapped = held()
        weakref.finalize(wrapped, self.release)  # a response cancelled before its first frame
        return wrapped
