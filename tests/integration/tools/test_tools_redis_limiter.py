"""The tools' rate limits shared through the real Redis at 127.0.0.1:6379: two registries (as
two processes would have) space one tool's calls together, on Redis's clock; an unreachable
Redis leaves each process spacing its own calls. Each test has its own key prefix."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.backends.redis import SharedRedis
from app.backends.redis_health import RedisHealth
from app.backends.tool_limiter_redis import RedisLimiterRegistry, Slot
from tools.registry import ToolOverrides, build_tools
from tools.runtime import TtlCache

UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
async def processes(
    redis_url: str, redis_prefix: str
) -> AsyncIterator[tuple[RedisLimiterRegistry, ...]]:
    registries = (
        RedisLimiterRegistry(redis_url, prefix=redis_prefix),
        RedisLimiterRegistry(redis_url, prefix=redis_prefix),
    )
    yield registries
    for registry in registries:
        await registry.aclose()


def _granted(slot: Slot | None) -> Slot:
    assert slot is not None
    return slot


async def test_two_processes_space_one_tool_s_calls_together(
    processes: tuple[RedisLimiterRegistry, ...],
) -> None:
    one, other = (registry.limiter("web_search", 0.2) for registry in processes)

    slots = [_granted(await limiter.reserve()) for limiter in (one, other, one)]

    starts = [slot.start for slot in slots]
    assert [later - earlier for earlier, later in itertools.pairwise(starts)] == pytest.approx(
        [0.2, 0.2], abs=1e-5
    )
    assert not any(slot.fallback for slot in slots)


async def test_a_call_waits_for_the_slot_another_process_took(
    processes: tuple[RedisLimiterRegistry, ...],
) -> None:
    one, other = (registry.limiter("arxiv", 0.3) for registry in processes)
    await one.acquire()
    loop = asyncio.get_running_loop()

    started = loop.time()
    assert await other.acquire() is True
    waited = loop.time() - started

    assert waited >= 0.2


async def test_a_refused_wait_takes_no_slot(processes: tuple[RedisLimiterRegistry, ...]) -> None:
    one, other = (registry.limiter("wikipedia", 0.2) for registry in processes)
    first = _granted(await one.reserve())

    assert await other.reserve(max_wait_s=0.05) is None
    assert await other.acquire(max_wait_s=0.05) is False
    after = _granted(await other.reserve())

    # The refusals took nothing: the next slot is the one right after the first.
    assert after.start - first.start == pytest.approx(0.2, abs=1e-5)


async def test_tools_without_spacing_never_reach_redis() -> None:
    registry = RedisLimiterRegistry(UNREACHABLE)
    limiter = registry.limiter("local_docs", 0.0)

    slots = [_granted(await limiter.reserve(max_wait_s=0.0)) for _ in range(3)]

    assert [slot.wait_s for slot in slots] == [0.0, 0.0, 0.0]
    assert not any(slot.fallback for slot in slots)


async def test_an_unreachable_redis_falls_back_to_spacing_in_the_process(
    clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    redis = SharedRedis(UNREACHABLE, health=RedisHealth(UNREACHABLE, clock=clock))
    registry = RedisLimiterRegistry(UNREACHABLE, clock=clock, sleep=clock.sleep, redis=redis)
    limiter = registry.limiter("web_search", 2.0)
    caplog.set_level(logging.WARNING, logger="app.backends.redis_health")

    first = _granted(await limiter.reserve())
    second = _granted(await limiter.reserve())
    assert await limiter.reserve(max_wait_s=1.0) is None
    assert await limiter.acquire() is True

    assert first.fallback
    assert second.fallback
    assert second.start - first.start == 2.0
    assert clock.sleeps == [4.0]  # the third slot: the refusal took none
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "unreachable (refused)" in warnings[0]


async def test_a_tool_called_in_one_process_is_held_back_in_the_other(
    processes: tuple[RedisLimiterRegistry, ...], make_settings: Any, call_tool: Any
) -> None:
    # The next slot is a minute away, past the call's 20 s: the other process's call is
    # refused at once, without reaching the search.
    settings = make_settings(tools=["web_search"], tool_min_interval_s=60.0, tool_timeout_s=20.0)
    searched: list[str] = []

    def search(query: str, **_: Any) -> list[dict[str, Any]]:
        searched.append(query)
        return [{"title": "T", "href": "https://t.example/", "body": "b"}]

    [first, second] = [
        build_tools(
            settings,
            overrides=ToolOverrides(web_search_fn=search, cache=TtlCache()),
            limiters=registry,
        )[0]
        for registry in processes
    ]

    answered = await call_tool(first, {"query": "one"})
    refused = await call_tool(second, {"query": "two"})

    assert answered.artifact["ok"] is True
    assert refused.artifact["error_kind"] == "rate_limited"
    assert searched == ["one"]
