"""Rate limits: the AIMD arithmetic of the adaptive model rate, the in-flight cap, the shared
limiter per model, and the fixed-rate bucket tools use."""

from __future__ import annotations

import asyncio

import pytest

from calls.aimd import AimdState
from calls.ratelimit import LocalLimiter, Permit, TokenBucket, model_limiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


# -- AIMD -------------------------------------------------------------------------------------


def test_with_no_rate_yet_requests_go_at_once() -> None:
    state = AimdState()

    starts = [state.reserve(10.0) for _ in range(5)]

    assert starts == [10.0] * 5
    assert state.effective_rate() is None


def test_a_ceiling_spaces_requests_after_the_burst() -> None:
    state = AimdState(ceiling=4.0, burst=2)

    starts = [state.reserve(10.0) for _ in range(4)]

    assert starts == pytest.approx([10.0, 10.0, 10.25, 10.5])


def test_the_first_429_cuts_to_beta_times_the_observed_rate() -> None:
    state = AimdState(beta=0.5)
    for i in range(20):  # 20 requests over one second: 20/s
        state.reserve(10.0 + i * 0.05)

    cut = state.on_rate_limited(11.0, epoch=state.epoch, retry_after_s=None)

    assert cut is True
    assert state.rate == pytest.approx(10.0)
    assert state.base == pytest.approx(10.0)


def test_a_429_pauses_everyone_for_the_retry_delay() -> None:
    state = AimdState(ceiling=100.0)
    state.reserve(10.0)

    state.on_rate_limited(10.1, epoch=0, retry_after_s=27.0)

    assert state.reserve(10.2) == pytest.approx(37.1)


def test_only_one_cut_per_round_of_requests_reserved_at_the_old_rate() -> None:
    state = AimdState(ceiling=10.0, beta=0.5)
    for _ in range(3):
        late = state.reserve(10.0)  # the last slot lies after the cut below, at the old rate
    assert late > 10.15

    assert state.on_rate_limited(10.2, epoch=0, retry_after_s=0.1) is True
    assert state.on_rate_limited(10.3, epoch=0, retry_after_s=0.1) is False
    assert state.rate == pytest.approx(5.0)
    assert (state.cuts, state.rate_limited, state.epoch) == (1, 2, 1)
    # A request reserved after the cut that fails again cuts again.
    state.reserve(10.4)
    assert state.on_rate_limited(10.6, epoch=1, retry_after_s=0.1) is True
    assert state.rate == pytest.approx(2.5)


def test_a_cut_restarts_the_schedule_after_the_pause() -> None:
    state = AimdState(ceiling=10.0, beta=0.5)
    slots = [state.reserve(10.0) for _ in range(10)]  # a second of slots at 10/s
    assert slots[-1] == pytest.approx(10.9)

    state.on_rate_limited(10.05, epoch=0, retry_after_s=0.2)

    # The next slot follows the pause at the new rate, not the queue reserved at the old one;
    # a re-reservation is not counted as a second grant.
    assert state.reserve(10.1, again=True) == pytest.approx(10.25)
    assert state.reserve(10.1) == pytest.approx(10.45)
    assert state.grants == 11


def test_successes_grow_the_rate_by_growth_times_base_per_second() -> None:
    state = AimdState(ceiling=None, beta=0.5, growth=0.1)
    state.rate = state.base = 4.0

    for _ in range(40):  # 40 successes at ~4-5/s: about 9 s of traffic
        state.on_success()

    # Each success adds 0.1 * 4 / rate, so rate² grows by 0.8 per success: √(16 + 32).
    assert state.rate == pytest.approx(48**0.5, rel=0.02)


def test_growth_stops_at_the_ceiling_and_cuts_stop_at_the_floor() -> None:
    state = AimdState(ceiling=5.0, floor=0.5, beta=0.1)
    state.rate = state.base = 4.9
    for _ in range(10):
        state.on_success()
    assert state.rate == 5.0

    state.on_rate_limited(1.0, epoch=0, retry_after_s=0.0)
    assert state.rate == 0.5


# -- the limiter ------------------------------------------------------------------------------


async def test_the_in_flight_cap_holds_the_next_caller_until_one_returns() -> None:
    limiter = LocalLimiter(AimdState(), max_in_flight=2)
    first = await limiter.acquire()
    await limiter.acquire()

    third = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.01)
    assert not third.done()
    assert limiter.stats().in_flight == 2

    await limiter.release(first, "ok")
    await asyncio.wait_for(third, 1.0)
    assert limiter.stats().in_flight == 2


async def test_a_rate_limited_release_cuts_the_rate_the_next_acquire_waits_for() -> None:
    clock = Clock()
    limiter = LocalLimiter(AimdState(ceiling=10.0), 4, clock=clock, sleep=clock.sleep)
    permit = await limiter.acquire()

    await limiter.release(permit, "rate_limited", 2.0)
    await limiter.acquire()

    stats = limiter.stats()
    assert (stats.rate_limited, stats.cuts) == (1, 1)
    assert stats.rate == pytest.approx(7.0)
    assert clock.sleeps == [pytest.approx(2.0)]


async def test_a_request_waiting_for_its_slot_when_the_rate_is_cut_waits_for_the_new_one() -> None:
    clock = Clock()
    limiter = LocalLimiter(AimdState(ceiling=2.0), 4, clock=clock, sleep=clock.sleep)
    first = await limiter.acquire()  # at once; the next slot is 0.5 s away
    cut_while_waiting = False

    async def sleep(seconds: float) -> None:
        nonlocal cut_while_waiting
        clock.sleeps.append(seconds)
        if not cut_while_waiting:  # another request's 429 arrives while this one waits
            cut_while_waiting = True
            await limiter.release(first, "rate_limited", 3.0)
        clock.now += seconds

    limiter._sleep = sleep
    second = await limiter.acquire()

    # It did not go at its old slot (100.5) but after the pause, in the new epoch.
    assert second.granted_at == pytest.approx(103.0)
    assert second.epoch == 1
    assert clock.sleeps == [pytest.approx(0.5), pytest.approx(2.5)]
    assert limiter.stats().grants == 2


def test_one_limiter_per_model_shared_by_every_caller() -> None:
    first = model_limiter("p:model-a", ceiling=None, burst=4, max_in_flight=16)

    assert model_limiter("p:model-a", ceiling=0.0, burst=4, max_in_flight=16) is first
    assert model_limiter("p:model-b", ceiling=None, burst=4, max_in_flight=16) is not first


def test_a_permit_remembers_when_and_in_which_epoch_it_was_granted() -> None:
    permit = Permit(granted_at=3.5, epoch=2)
    assert (permit.granted_at, permit.epoch) == (3.5, 2)


# -- the fixed-rate bucket ----------------------------------------------------------------------


def test_a_burst_goes_at_once_then_requests_are_spaced_at_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=4.0, burst=2, clock=clock)

    waits = [bucket.reserve(float("inf")) for _ in range(4)]

    assert waits == pytest.approx([0.0, 0.0, 0.25, 0.5])


def test_slots_refill_as_time_passes() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=2.0, burst=1, clock=clock)
    assert bucket.reserve(0.0) == 0.0

    clock.now += 0.5

    assert bucket.reserve(0.0) == 0.0


def test_a_check_without_waiting_takes_nothing_and_says_when_to_retry() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=2.0, burst=1, clock=clock)
    assert bucket.try_reserve() == (True, 0.0)

    refused = [bucket.try_reserve() for _ in range(2)]
    clock.now += 0.5

    assert refused == [(False, pytest.approx(0.5))] * 2  # the refusals took no slot
    assert bucket.try_reserve() == (True, 0.0)


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(rate=0)
