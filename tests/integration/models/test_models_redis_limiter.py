"""The Redis-backed adaptive limiter against the real Redis at 127.0.0.1:6379: two limiters
(as two processes would have) share one rate, one cut and one pause; each test uses its own
key prefix and deletes it after."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from app.backends.model_limiter_redis import RedisLimiter

Pair = Callable[..., tuple[RedisLimiter, RedisLimiter]]


@pytest.fixture
def pair(redis_url: str, redis_prefix: str) -> Pair:
    """`pair(**options)`: two limiters, as two processes hold them, on this test's prefix."""

    def make(**kwargs: object) -> tuple[RedisLimiter, RedisLimiter]:
        options: dict[str, object] = {"ceiling": None, "burst": 1, "max_in_flight": 8, **kwargs}
        first = RedisLimiter(redis_url, "m", prefix=redis_prefix, **options)  # type: ignore[arg-type]
        second = RedisLimiter(redis_url, "m", prefix=redis_prefix, **options)  # type: ignore[arg-type]
        return first, second

    return make


async def test_a_429_seen_by_one_process_cuts_and_pauses_the_other(pair: Pair) -> None:
    one, other = pair()
    permits = [await one.acquire() for _ in range(6)]  # fewer than the in-flight cap

    await one.release(permits[0], "rate_limited", 0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await other.acquire()
    waited = loop.time() - started

    state = await other.shared_state()
    assert float(state["rate"]) > 0  # the shared rate now holds
    assert int(state["cuts"]) == 1
    assert int(state["rate_limited"]) == 1
    assert waited >= 0.2  # the retry delay held the other process back too
    for limiter in (one, other):
        await limiter.aclose()


async def test_requests_sent_before_a_cut_do_not_cut_again(pair: Pair) -> None:
    one, other = pair()
    early = [await one.acquire(), await other.acquire()]

    await one.release(early[0], "rate_limited", 0.0)
    rate_after_first = float((await one.shared_state())["rate"])
    await other.release(early[1], "rate_limited", 0.0)

    state = await one.shared_state()
    assert int(state["cuts"]) == 1
    assert float(state["rate"]) == pytest.approx(rate_after_first)
    for limiter in (one, other):
        await limiter.aclose()


async def test_a_slot_waiting_when_another_process_cuts_waits_for_the_pause(pair: Pair) -> None:
    one, other = pair(ceiling=2.0, burst=2)
    early, stale = await one.acquire(), await one.acquire()  # the burst: both at once
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = asyncio.create_task(other.acquire())  # its slot is 0.5 s away
    await asyncio.sleep(0.1)

    await one.release(early, "rate_limited", 1.0)  # the other process hears of a 429
    second = await waiting

    # The old slot (0.5 s) was given up: the request waited for the pause, in the new epoch,
    # and a 429 of a request reserved before the cut does not cut again.
    assert loop.time() - started >= 0.9
    assert second.epoch == 1
    await one.release(stale, "rate_limited", 0.0)
    await other.release(second, "ok")
    state = await one.shared_state()
    assert (int(state["cuts"]), int(state["epoch"]), int(state["grants"])) == (1, 1, 3)
    for limiter in (one, other):
        await limiter.aclose()


async def test_successes_grow_the_shared_rate_up_to_the_ceiling(pair: Pair) -> None:
    one, other = pair(ceiling=50.0)
    permit = await one.acquire()
    await one.release(permit, "rate_limited", 0.0)
    cut = float((await one.shared_state())["rate"])

    for limiter in (one, other) * 5:
        await limiter.release(await limiter.acquire(), "ok")

    grown = float((await other.shared_state())["rate"])
    assert cut < grown <= 50.0
    assert one.stats().rate == pytest.approx(other.stats().rate or 0.0, rel=0.2)
    for limiter in (one, other):
        await limiter.aclose()


async def test_an_unreachable_redis_falls_back_to_the_process_s_own_rate() -> None:
    limiter = RedisLimiter("redis://127.0.0.1:1/0", "m", ceiling=None, burst=1, max_in_flight=2)

    permit = await limiter.acquire()
    await limiter.release(permit, "ok")

    assert permit.fallback
    assert limiter.stats().in_flight == 0
