"""Per-key limits: requests per second (the token bucket of `calls.ratelimit`, asked without
waiting), open event streams, and queued plus
running runs. They apply to named keys, not to the admin key nor to the single user (no keys),
whom the process-wide run queue bounds. Request and stream counts are per process; the run
count is the store's, so it holds across processes."""

from __future__ import annotations

import logging
import math
import time
import weakref
from collections.abc import AsyncIterator, Callable

from prometheus_client import Counter

from app.access.tenancy import Caller
from app.errors import ServiceError
from app.store.base import RunStore
from calls.ratelimit import TokenBucket

logger = logging.getLogger(__name__)

LIMITED = Counter(
    "plantree_key_limited",
    "Requests a per-key limit refused, by key name and limit (rate, streams, runs).",
    ["caller", "limit"],
)


class RateLimited(ServiceError):
    """A per-key limit refused the request; retry after `retry_after_s`."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: int, code: str = "rate_limited") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.code = code


class KeyLimits:
    """The limits of one process, by key name."""

    def __init__(
        self,
        *,
        rps: float,
        burst: int,
        max_streams: int,
        max_runs: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rps, self._burst, self._clock = rps, burst, clock
        self._max_streams = max_streams
        self._max_runs = max_runs
        self._buckets: dict[str, TokenBucket] = {}
        self._streams: dict[str, int] = {}

    def _refuse(self, caller: Caller, limit: str, message: str, retry_after_s: float) -> None:
        LIMITED.labels(caller.label, limit).inc()
        logger.info("caller=%s refused by the %s limit", caller.label, limit)
        raise RateLimited(message, max(1, math.ceil(retry_after_s)), f"too_many_{limit}")

    def request(self, caller: Caller) -> None:
        """Count one request; raises `RateLimited` beyond the key's rate."""
        if not caller.limited or caller.name is None:
            return
        bucket = self._buckets.get(caller.name)
        if bucket is None:
            bucket = TokenBucket(self._rps, self._burst, clock=self._clock)
            self._buckets[caller.name] = bucket
        allowed, wait = bucket.try_reserve(0.0)
        if not allowed:
            self._refuse(caller, "requests", "too many requests for this key; slow down", wait)

    async def run(self, caller: Caller, store: RunStore) -> None:
        """Raises `RateLimited` when the key already has its most queued plus running runs."""
        if not caller.limited:
            return
        if await store.count_open(caller.tenant) >= self._max_runs:
            self._refuse(
                caller, "runs", f"this key already has {self._max_runs} runs queued or running", 5
            )

    def stream_slot(self, caller: Caller) -> StreamSlot:
        """One of the key's event stream slots; raises `RateLimited` when all are taken."""
        name = caller.name
        if not caller.limited or name is None:
            return StreamSlot(None)
        if self._streams.get(name, 0) >= self._max_streams:
            self._refuse(
                caller, "streams", f"this key already has {self._max_streams} streams open", 5
            )
        self._streams[name] = self._streams.get(name, 0) + 1

        def give_back() -> None:
            self._streams[name] -= 1

        return StreamSlot(give_back)

    def open_streams(self, caller: Caller) -> int:
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
