"""The Redis-backed adaptive limiter against the real Redis at 127.0.0.1:6379: two limiters
(as two processes would have) share one rate, one cut and one pause, and one in-flight cap;
each test uses its own key prefix and deletes it after."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import pytest

from app.backends.model_limiter_redis import RedisLimiter
from calls.concurrency import ConcurrencyLimit

Pair = Callable[..., tuple[RedisLimiter, RedisLimiter]]


@pytest.fixture
async def pair(redis_url: str, redis_prefix: str) -> AsyncIterator[Pair]:
    """`pair(**options)`: two limiters, as two processes hold them, on this test's prefix;
    every limiter made is closed after the test."""
    made: list[RedisLimiter] = []

    def make(**kwargs: object) -> tuple[RedisLimiter, RedisLimiter]:
        options: dict[str, object] = {"ceiling": None, "burst": 1, "max_in_flight": 8, **kwargs}
        first = RedisLimiter(redis_url, "m", prefix=redis_prefix, **options)  # type: ignore[arg-type]
        second = RedisLimiter(redis_url, "m", prefix=redis_prefix, **options)  # type: ignore[arg-type]
        made.extend((first, second))
        return first, second

    yield make
    for limiter in made:
        await limiter.aclose()


async def test_a_429_seen_by_one_process_cuts_and_pauses_the_other(pair: Pair) -> None:
    one, other = pair(max_in_flight=16)
    permits = [await one.acquire() for _ in range(6)]  # fewer than the cap, cut or not

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


async def test_requests_sent_before_a_cut_do_not_cut_again(pair: Pair) -> None:
    one, other = pair()
    early = [await one.acquire(), await other.acquire()]

    await one.release(early[0], "rate_limited", 0.0)
    rate_after_first = float((await one.shared_state())["rate"])
    await other.release(early[1], "rate_limited", 0.0)

    state = await one.shared_state()
    assert int(state["cuts"]) == 1
    assert float(state["rate"]) == pytest.approx(rate_after_first)


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


async def test_an_unreachable_redis_falls_back_to_the_process_s_own_rate() -> None:
    limiter = RedisLimiter("redis://127.0.0.1:1/0", "m", ceiling=None, burst=1, max_in_flight=2)

    permit = await limiter.acquire()
    await limiter.release(permit, "ok")

    assert permit.fallback
    assert limiter.stats().in_flight == 0


async def test_the_cap_bounds_the_calls_in_flight_of_every_process_together(pair: Pair) -> None:
    one, other = pair(max_in_flight=4)  # the shared cap starts at its ceiling, 4
    held = [await one.acquire() for _ in range(3)] + [await other.acquire()]
    assert held[-1].cap_full
    assert not held[0].cap_full

    waiting = asyncio.create_task(other.acquire())
    await asyncio.sleep(0.2)
    assert not waiting.done()  # four in flight in the deployment: the fifth waits
    assert (await one.shared_cap())["held"] == "4"

    await one.release(held[0], "ok")  # the other process takes the place within its poll
    fifth = await asyncio.wait_for(waiting, 1.0)
    assert (await one.shared_cap())["held"] == "4"
    for limiter, permit in [(one, held[1]), (one, held[2]), (other, held[3]), (other, fifth)]:
        await limiter.release(permit, "ok")
    assert (await one.shared_cap())["held"] == "0"
    assert (one.stats().in_flight, other.stats().in_flight) == (0, 0)


async def test_a_429_in_one_process_cuts_the_cap_of_the_other(pair: Pair) -> None:
    one, other = pair(max_in_flight=10)
    permit = await one.acquire()
    await one.release(permit, "rate_limited", 0.0)

    await other.release(await other.acquire(), "error")  # says nothing; reads the cap
    state = await other.shared_cap()
    assert float(state["cap"]) == pytest.approx(7.0)  # 10 * 0.7
    assert other.stats().max_in_flight == 7
    assert int(state["cuts"]) == 1


async def test_the_shared_cap_follows_the_in_process_rules(pair: Pair) -> None:
    """The same answers (latency, round, whether the call filled the cap) fed to the shared
    cap and to `ConcurrencyLimit` leave both at the same cap, cut for cut."""
    limiter, _ = pair(max_in_flight=6)
    limiter.gate.initial = limiter.gate.limit = 3  # room to grow under the ceiling
    control = ConcurrencyLimit(ceiling=6, initial=3)

    # Prompt answers grow the cap; a 429 cuts it; then latency rises and cuts it again.
    answers = [("ok", 0.2)] * 40 + [("rate_limited", 0.2)] + [("ok", 0.2)] * 10
    answers += [("ok", 1.5)] * 6
    for outcome, latency in answers:
        permits = [await limiter.acquire() for _ in range(limiter.gate.limit)]  # the last fills
        for permit in permits:
            sent = replace(permit, sent_at=time.monotonic() - latency)
            await limiter.release(sent, outcome, 0.0)  # type: ignore[arg-type]
            if outcome == "ok":
                control.on_ok(latency, permit.cap_round, permit.cap_full)
            else:
                control.on_rate_limited(permit.cap_round)
            assert limiter.gate.limit == control.limit
        if outcome == "rate_limited":  # the rate's own cut is the tests' above: forget it
            await limiter._redis.call(lambda client: client.delete(limiter.key))
        state = await limiter.shared_cap()
        assert float(state["cap"]) == pytest.approx(control.cap, rel=1e-3)
    assert control.cuts >= 2  # the rules were exercised: the 429 and the slowdown
    assert int(state["cuts"]) == control.cuts
    assert state["held"] == "0"


async def test_a_place_held_by_a_process_that_died_comes_back_after_its_hold(pair: Pair) -> None:
    dead, alive = pair(max_in_flight=1, hold_s=0.4, alive_s=60.0)
    await dead.acquire()  # never given back
    loop = asyncio.get_running_loop()
    started = loop.time()

    permit = await asyncio.wait_for(alive.acquire(), 3.0)

    assert loop.time() - started >= 0.3
    await alive.release(permit, "ok")


async def test_a_process_not_heard_of_gives_its_places_back_when_the_cap_is_full(
    pair: Pair,
) -> None:
    dead, alive = pair(max_in_flight=1, hold_s=60.0, alive_s=0.4)
    await dead.acquire()  # its process dies: never given back, and no call of it again
    loop = asyncio.get_running_loop()
    started = loop.time()

    permit = await asyncio.wait_for(alive.acquire(), 3.0)  # long before the hold runs out

    assert loop.time() - started >= 0.3
    await alive.release(permit, "ok")


async def test_a_process_that_keeps_calling_keeps_its_places(pair: Pair) -> None:
    busy, other = pair(max_in_flight=1, hold_s=60.0, alive_s=0.3)
    held = await busy.acquire()
    asking = asyncio.create_task(busy.acquire())  # its queue asks Redis every 50 ms or less

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(other.acquire(), 1.0)  # more than twice `alive_s`

    await busy.release(held, "ok")
    await busy.release(await asyncio.wait_for(asking, 1.0), "ok")
    assert (await busy.shared_cap())["held"] == "0"


async def test_a_caller_that_stops_waiting_holds_no_place(pair: Pair) -> None:
    one, other = pair(max_in_flight=1)
    first = await one.acquire()
    waiting = asyncio.create_task(other.acquire())
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    await one.release(first, "ok")
    assert (await one.shared_cap())["held"] == "0"
    await other.release(await asyncio.wait_for(other.acquire(), 1.0), "ok")


async def test_callers_waiting_for_rate_slots_do_not_queue_behind_each_other(pair: Pair) -> None:
    """Under a rate of 2/s, three callers of one process reserve their three slots at once
    (0, 0.5 and 1 s away) and then wait for them side by side: the process's queue is only for
    places in flight, never held while a slot is awaited."""
    one, _ = pair(ceiling=2.0, burst=1, max_in_flight=8)
    callers = [asyncio.create_task(one.acquire()) for _ in range(3)]
    await asyncio.sleep(0.25)

    state = await one.shared_state()
    assert int(state["grants"]) == 3  # every slot reserved, the last one still 0.75 s away
    assert (await one.shared_cap())["held"] == "3"
    for permit in await asyncio.gather(*callers):
        await one.release(permit, "ok")
