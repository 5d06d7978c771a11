"""Rate limits: the adaptive model limiter (an AIMD rate over an adaptive number of calls in
flight), one per model and shared by every run of the process, and the fixed-interval bucket
tools use.

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
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from calls.aimd import AimdState
from calls.concurrency import DEFAULT_INITIAL, ConcurrencyLimit

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
    # Its place in the in-flight gate: the cap's round, whether it filled the cap, and when it
    # went out (time.monotonic; see `calls.concurrency`).
    cap_round: int = 0
    cap_full: bool = False
    sent_at: float = 0.0
    slot: str = ""  # its place among a deployment's calls in flight, when they are shared


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
    """At most `limit` holders at once, the limit learnt from the answers (the adaptive cap,
    `calls/concurrency.py`) within `ceiling`. Waiters go in arrival order and are handed a
    freed place directly, on their own event loop. Thread-safe; a place handed to a loop that
    has closed stays free, but one handed to a loop that closes before it runs the hand-off is
    lost, so a gate serves one loop at a time (a process has one; the tests start a fresh
    limiter with each loop)."""

    def __init__(self, ceiling: int, *, initial: int = DEFAULT_INITIAL) -> None:
        self.control = ConcurrencyLimit(ceiling=ceiling, initial=initial)
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[Permit]]] = deque()
        self.held = 0

    @property
    def limit(self) -> int:
        return self.control.limit

    def _ticket(self) -> Permit:
        """A place taken now (under the lock): its round and whether it filled the cap."""
        self.held += 1
        control = self.control
        return Permit(granted_at=0.0, cap_round=control.round, cap_full=self.held >= control.limit)

    async def enter(self) -> Permit:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.held < self.control.limit and not self._waiters:
                return self._ticket()
            place: asyncio.Future[Permit] = loop.create_future()
            self._waiters.append((loop, place))
            self._dispatch()  # a place may be free behind waiters that are gone
        try:
            return await place
        except asyncio.CancelledError:
            with self._lock:
                handed = place.done() and not place.cancelled()
                if not handed:
                    self._waiters = deque(w for w in self._waiters if w[1] is not place)
            if handed:
                self._give_back()
            raise

    def leave(self, permit: Permit, outcome: Outcome | None = None) -> None:
        """Give the place back; an `outcome` teaches the cap (None: nothing to learn)."""
        latency_s = time.monotonic() - permit.sent_at
        with self._lock:
            if outcome == "ok":
                self.control.on_ok(latency_s, permit.cap_round, permit.cap_full)
            elif outcome == "rate_limited":
                self.control.on_rate_limited(permit.cap_round)
        self._give_back()

    def _give_back(self) -> None:
        with self._lock:
            self.held -= 1
            self._dispatch()

    def _dispatch(self) -> None:
        """Hand the free places to the first waiters (under the lock); a waiter whose loop
        has closed is skipped."""
        while self._waiters and self.held < self.control.limit:
            loop, place = self._waiters.popleft()
            if place.done():
                continue
            ticket = self._ticket()
            try:
                loop.call_soon_threadsafe(self._hand, place, ticket)
            except RuntimeError:  # that loop has closed: the place stays free
                self.held -= 1

    def _hand(self, place: asyncio.Future[Permit], ticket: Permit) -> None:
        """On the waiter's loop: give it its place, or back if it stopped waiting."""
        if place.done():
            self._give_back()
        else:
            place.set_result(ticket)

    async def admit(self, reserve: Callable[[], Awaitable[Permit]]) -> Permit:
        """Enter, then wait for `reserve`'s permit; leave again if that fails or is cancelled
        (a permit granted holds the gate until its release). The permit carries the place's
        round and when it went out, which `leave` reads."""
        ticket = await self.enter()
        try:
            permit = await reserve()
        except BaseException:
            self._give_back()
            raise
        return replace(
            permit,
            cap_round=ticket.cap_round,
            cap_full=ticket.cap_full,
            sent_at=time.monotonic(),
        )


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
        self.gate.leave(permit, outcome)
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
