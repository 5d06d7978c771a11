"""Rate limits: the adaptive model limiter (AIMD over a bounded number of calls in flight), one
per model and shared by every run of the process, and the fixed-interval bucket tools use.

`model_limiter` gives the in-process one; a `LimiterSource` given to the model factory may give
another (the service's is shared by all processes through Redis when it has one). The rate
arithmetic is `calls.aimd`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from calls.aimd import AimdState

logger = logging.getLogger(__name__)

Outcome = Literal["ok", "rate_limited", "error"]
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Permit:
    """One granted request: when it went out, on the limiter's clock."""

    granted_at: float
    epoch: int = 0  # the rate epoch its slot was reserved in (see `calls.aimd`)
    fallback: bool = False  # granted by a shared limiter's in-process stand-in


@dataclass(frozen=True)
class LimiterStats:
    """What a limiter is doing now, for metrics and logs."""

    rate: float | None  # requests/s in force; None: only the in-flight cap
    in_flight: int
    max_in_flight: int
    grants: int
    rate_limited: int
    cuts: int


class ModelLimiter(Protocol):
    """Admission for model requests: `acquire` before an attempt, `release` after it."""

    async def acquire(self) -> Permit: ...

    async def release(
        self, permit: Permit, outcome: Outcome, retry_after_s: float | None = None
    ) -> None: ...

    def stats(self) -> LimiterStats: ...


class InFlightGate:
    """At most `limit` holders at once. One semaphore per event loop (a process has one in
    production; tests start a loop per test), so the gate is safe to share process-wide."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._lock = threading.Lock()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        self.held = 0

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
            return semaphore

    async def enter(self) -> None:
        await self._semaphore().acquire()
        with self._lock:
            self.held += 1

    def leave(self) -> None:
        with self._lock:
            self.held -= 1
        self._semaphore().release()

    async def admit(self, reserve: Callable[[], Awaitable[Permit]]) -> Permit:
        """Enter, then wait for `reserve`'s permit; leave again if that fails or is cancelled
        (a permit granted holds the gate until its release)."""
        await self.enter()
        try:
            return await reserve()
        except BaseException:
            self.leave()
            raise


class LocalLimiter:
    """The in-process adaptive limiter: the in-flight gate, then the AIMD rate slot."""

    def __init__(
        self,
        state: AimdState,
        max_in_flight: int,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        name: str = "model",
    ) -> None:
        self.state = state
        self.gate = InFlightGate(max_in_flight)
        self.name = name
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()

    async def acquire(self) -> Permit:
        return await self.gate.admit(self._reserve)

    async def _reserve(self) -> Permit:
        again = False
        while True:
            with self._lock:
                now = self._clock()
                epoch = self.state.epoch
                start = self.state.reserve(now, again=again)
            if start > now:
                await self._sleep(start - now)
            with self._lock:
                if self.state.epoch == epoch:
                    return Permit(granted_at=start, epoch=epoch)
            again = True  # the rate was cut while this slot waited: reserve at the new one

    async def release(
        self, permit: Permit, outcome: Outcome, retry_after_s: float | None = None
    ) -> None:
        self.gate.leave()
        with self._lock:
            if outcome == "ok":
                self.state.on_success()
            elif outcome == "rate_limited":
                cut = self.state.on_rate_limited(self._clock(), permit.epoch, retry_after_s)
                if cut:
                    logger.warning(
                        "%s: rate limited; allowed rate now %.2f/s (retry after %s)",
                        self.name,
                        self.state.rate or 0.0,
                        "?" if retry_after_s is None else f"{retry_after_s:g}s",
                    )

    def stats(self) -> LimiterStats:
        with self._lock:
            state = self.state
            return LimiterStats(
                rate=state.effective_rate(),
                in_flight=self.gate.held,
                max_in_flight=self.gate.limit,
                grants=state.grants,
                rate_limited=state.rate_limited,
                cuts=state.cuts,
            )


_shared: dict[tuple[object, ...], ModelLimiter] = {}
_shared_lock = threading.Lock()


class LimiterSource(Protocol):
    """Gives the limiter of one model: `model_limiter` in-process; the service passes one
    shared through Redis when it has one (`app.backends.model_limiter_redis`)."""

    def __call__(
        self, model: str, *, ceiling: float | None, burst: int, max_in_flight: int
    ) -> ModelLimiter: ...


def shared_limiter(key: tuple[object, ...], make: Callable[[], ModelLimiter]) -> ModelLimiter:
    """The process's one limiter under `key`, made on first use, so all runs and roles calling
    one model share one rate."""
    with _shared_lock:
        limiter = _shared.get(key)
        if limiter is None:
            limiter = _shared[key] = make()
        return limiter


def model_limiter(
    model: str, *, ceiling: float | None, burst: int, max_in_flight: int
) -> ModelLimiter:
    """The process's in-process limiter for `model` (one per model string and settings).
    `ceiling` (requests/s, None or 0: none) caps the adaptive rate."""
    ceiling = ceiling if ceiling else None

    def make() -> ModelLimiter:
        return LocalLimiter(AimdState(ceiling=ceiling, burst=burst), max_in_flight, name=model)

    return shared_limiter(("local", model, ceiling, burst, max_in_flight), make)


def reset_model_limiters() -> None:
    """Forget every shared model limiter: the next caller starts from a fresh rate (a bench
    point, and the tests' one fixture after every test)."""
    with _shared_lock:
        _shared.clear()


class TokenBucket:
    """At most `rate` starts per second on average, with bursts of up to `burst`.

    Each caller reserves the next free slot and sleeps exactly until it (no polling), so waiters
    go in arrival order. Slots are reserved under a thread lock with no await inside, so one
    instance is safe across tasks, threads and event loops. Tools space their calls with it;
    the per-key request limit (app/access/limits.py) asks it without waiting (`try_reserve`).
    """

    def __init__(
        self,
        rate: float,
        burst: int = 1,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tat = float("-inf")  # theoretical arrival time of the next start (GCRA)

    def set_rate(self, rate: float) -> None:
        """Change the rate for the slots reserved from now on."""
        if rate <= 0:
            raise ValueError("rate must be positive")
        with self._lock:
            self.rate = rate

    def try_reserve(self, max_wait_s: float = 0.0) -> tuple[bool, float]:
        """Take the next free slot if it is at most `max_wait_s` away, without waiting:
        (True, the seconds until it), or (False, the seconds until it) with no slot taken, which
        a caller that does not wait gives back as "retry after"."""
        with self._lock:
            now = self._clock()
            interval = 1.0 / self.rate
            start = max(now, self._tat - (self.burst - 1) * interval)
            if start - now > max_wait_s:
                return False, start - now
            self._tat = max(self._tat, start) + interval
            return True, start - now

    def reserve(self, max_wait_s: float = math.inf) -> float | None:
        """Take the next free slot without waiting: the seconds until it, or None (no slot
        taken) when that is over `max_wait_s`."""
        granted, wait = self.try_reserve(max_wait_s)
        return wait if granted else None

    async def acquire(self, max_wait_s: float = float("inf")) -> bool:
        """Wait for this call's slot; False (no slot taken) when it is over `max_wait_s` away."""
        wait = self.reserve(max_wait_s)
        if wait is None:
            return False
        if wait > 0:
            await self._sleep(wait)
        return True
