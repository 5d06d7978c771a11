"""The process-wide model rate limit: one limiter per rate, shared by every run and role."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from langchain_core.rate_limiters import BaseRateLimiter


class TokenBucket(BaseRateLimiter):
    """At most `rate` acquisitions per second on average, with bursts of up to `burst`.

    Each caller reserves the next free slot and sleeps exactly until it (no polling), so
    waiters go in arrival order. Thread-safe and not tied to one event loop, which lets one
    instance serve every run of the process.
    """

    def __init__(
        self, rate: float, burst: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1, burst)
        self._interval = 1.0 / rate
        self._clock = clock
        self._lock = threading.Lock()
        self._next_slot = clock()  # theoretical time of the next request at the steady rate

    def _reserve(self, *, blocking: bool) -> float | None:
        """Seconds to wait before the reserved slot (None: not reserved, non-blocking)."""
        with self._lock:
            now = self._clock()
            slot = max(self._next_slot, now)
            wait = max(0.0, slot - (self.burst - 1) * self._interval - now)
            if wait > 0 and not blocking:
                return None
            self._next_slot = slot + self._interval
            return wait

    def acquire(self, *, blocking: bool = True) -> bool:
        """Take a slot, sleeping the thread until it comes (or return False at once)."""
        wait = self._reserve(blocking=blocking)
        if wait is None:
            return False
        if wait > 0:
            time.sleep(wait)
        return True

    async def aacquire(self, *, blocking: bool = True) -> bool:
        """Take a slot, sleeping the task until it comes (or return False at once)."""
        wait = self._reserve(blocking=blocking)
        if wait is None:
            return False
        if wait > 0:
            await asyncio.sleep(wait)
        return True


_shared: dict[tuple[float, int], TokenBucket] = {}
_shared_lock = threading.Lock()


def shared_limiter(rate: float, burst: int = 1) -> TokenBucket | None:
    """The process's limiter for `rate` requests/second (None when `rate` is 0: no limit).

    Every factory built with the same setting gets the same instance, so all runs of the
    process share one budget of requests.
    """
    if rate <= 0:
        return None
    key = (rate, burst)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = TokenBucket(rate, burst)
        return _shared[key]
