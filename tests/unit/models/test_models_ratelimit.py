"""The process-wide token bucket: bursts, then the steady rate, in arrival order."""

from __future__ import annotations

import pytest

from agents.ratelimit import TokenBucket, shared_limiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_goes_at_once_then_requests_are_spaced_at_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=4.0, burst=2, clock=clock)

    waits = [bucket._reserve(blocking=True) for _ in range(4)]

    assert waits == pytest.approx([0.0, 0.0, 0.25, 0.5])


def test_slots_refill_as_time_passes() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=2.0, burst=1, clock=clock)
    assert bucket._reserve(blocking=True) == 0.0

    clock.now += 0.5

    assert bucket._reserve(blocking=True) == 0.0


def test_non_blocking_acquire_refuses_without_reserving() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=1.0, burst=1, clock=clock)
    assert bucket.acquire(blocking=False)

    assert not bucket.acquire(blocking=False)
    clock.now += 1.0
    assert bucket.acquire(blocking=False)


async def test_async_acquire_waits_for_its_slot() -> None:
    bucket = TokenBucket(rate=50.0, burst=1)

    assert await bucket.aacquire()
    assert await bucket.aacquire()  # the second waits about 20 ms, then goes
    assert bucket._reserve(blocking=False) is None


def test_the_shared_limiter_is_one_per_rate_and_none_without_a_rate() -> None:
    assert shared_limiter(7.5, 2) is shared_limiter(7.5, 2)
    assert shared_limiter(7.5, 2) is not shared_limiter(8.5, 2)
    assert shared_limiter(0) is None


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(rate=0)
