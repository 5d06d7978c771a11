"""Per-key request and stream limits shared through a real Redis: two `KeyLimits` (two API
processes, each with its own Redis clients) give a key its limits once between them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from app.access.limits import KeyLimits, RateLimited
from app.backends.key_limits_redis import RedisKeyLimits
from app.backends.redis import SharedRedis
from app.keys.tenancy import Caller

ALICE, BOB = Caller("alice"), Caller("bob")


def _replicas(redis_url: str, prefix: str, **shared: float) -> list[KeyLimits]:
    """Two processes' limits: 3 requests in a burst (then one per 100 s), 2 streams."""
    return [
        KeyLimits(
            rps=0.01,
            burst=3,
            max_streams=2,
            max_runs=5,
            shared=RedisKeyLimits(SharedRedis(redis_url), prefix=prefix, **shared),
        )
        for _ in range(2)
    ]


async def _refused(check: Awaitable[object]) -> RateLimited | None:
    try:
        await check
    except RateLimited as refused:
        return refused
    return None


async def test_a_keys_request_rate_is_counted_once_across_replicas(
    redis_url: str, redis_prefix: str
) -> None:
    one, two = _replicas(redis_url, redis_prefix)

    outcomes = [await _refused((one, two)[i % 2].request(ALICE)) for i in range(5)]
    other = await _refused(two.request(BOB))

    assert outcomes[:3] == [None, None, None]  # the burst, split between the two
    refused = [o for o in outcomes[3:] if o is not None]
    assert len(refused) == 2
    assert {r.code for r in refused} == {"too_many_requests"}
    assert all(r.retry_after_s >= 90 for r in refused)  # one request per 100 s
    assert other is None  # another key has its own


async def test_a_keys_streams_are_counted_once_across_replicas_and_given_back(
    redis_url: str, redis_prefix: str
) -> None:
    one, two = _replicas(redis_url, redis_prefix)

    first = await one.stream_slot(ALICE)
    second = await two.stream_slot(ALICE)
    third = await _refused(one.stream_slot(ALICE))
    fourth = await _refused(two.stream_slot(ALICE))
    bobs = await two.stream_slot(BOB)

    assert third is not None
    assert third.code == "too_many_streams"
    assert fourth is not None
    first.release()
    for _ in range(100):  # the slot is removed from Redis in the background
        await asyncio.sleep(0.01)
        if await _refused(two.stream_slot(ALICE)) is None:
            break
    else:
        pytest.fail("a given-back stream slot stayed taken")
    assert await _refused(one.stream_slot(ALICE)) is not None  # full again: second + the new
    second.release()
    bobs.release()


async def test_a_stream_slot_of_a_process_that_died_lapses_and_a_living_one_is_renewed(
    redis_url: str, redis_prefix: str
) -> None:
    hold_s = 0.5
    dead, alive = _replicas(redis_url, redis_prefix, hold_s=hold_s, renew_s=0.1)
    dead_shared = dead._shared
    assert dead_shared is not None

    await dead.stream_slot(ALICE)
    await dead_shared.aclose()  # no more renewals: the process is gone
    kept = await alive.stream_slot(ALICE)
    assert await _refused(alive.stream_slot(ALICE)) is not None

    lapsed = False
    for _ in range(60):
        await asyncio.sleep(0.05)
        if await _refused(alive.stream_slot(ALICE)) is None:
            lapsed = True
            break
    # The dead process's slot lapsed after its hold; the living one's, renewed, did not.
    assert lapsed
    assert await _refused(alive.stream_slot(ALICE)) is not None
    kept.release()
