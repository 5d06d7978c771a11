"""The shared call path: cache, rate limiter, retries with backoff, deadline, timeout."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from tests.support.tool_fixtures import clocked_runtime
from tools.results import Hit as ResultHit
from tools.results import ToolResult, render_hits
from tools.runtime import (
    LimiterRegistry,
    RateLimiter,
    ToolCallError,
    ToolRuntime,
    TtlCache,
    cache_key,
)


def _runtime(
    clock: Any, *, timeout_s: float = 20.0, max_retries: int = 2, jitter: float = 0.5
) -> ToolRuntime:
    return clocked_runtime(
        clock, "probe", timeout_s=timeout_s, max_retries=max_retries, jitter=lambda: jitter
    )


def _classify(exc: Exception) -> ToolCallError:
    return ToolCallError("internal", detail=type(exc).__name__)


class ScriptedFetch:
    """A blocking fetch that raises the scripted errors in turn, then succeeds."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.queries: list[str] = []

    def __call__(self, query: str) -> ToolResult:
        self.queries.append(query)
        if self.errors:
            raise self.errors.pop(0)
        return render_hits("probe", query, [ResultHit("T", "https://t.example/", "body")], 1000)


def _rate_limited() -> ToolCallError:
    return ToolCallError("rate_limited", retryable=True)


# -- cache ------------------------------------------------------------------------------------


def test_cache_entry_expires_after_its_ttl(clock: Any) -> None:
    cache: TtlCache[str] = TtlCache(clock=clock)
    cache.put("k", "v", ttl_s=10)

    clock.now += 9.9
    assert cache.get("k") == "v"
    clock.now += 0.2
    assert cache.get("k") is None
    assert len(cache) == 0


def test_cache_evicts_the_least_recently_used_entry(clock: Any) -> None:
    cache: TtlCache[int] = TtlCache(max_entries=2, clock=clock)
    cache.put("a", 1, 60)
    cache.put("b", 2, 60)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 60)

    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_cache_stores_nothing_with_zero_ttl(clock: Any) -> None:
    cache: TtlCache[int] = TtlCache(clock=clock)
    cache.put("a", 1, 0)

    assert cache.get("a") is None


def test_cache_key_normalises_whitespace_and_case_and_separates_tools() -> None:
    assert cache_key("web_search", "s", "  Tree   of\nThoughts ") == cache_key(
        "web_search", "s", "tree of thoughts"
    )
    assert cache_key("web_search", "s", "q") != cache_key("wikipedia", "s", "q")
    assert cache_key("web_search", "region-a", "q") != cache_key("web_search", "region-b", "q")
    assert cache_key("arxiv", "", "a AND b", casefold=False) != cache_key(
        "arxiv", "", "a and b", casefold=False
    )


async def test_second_identical_call_is_served_from_the_cache(clock: Any) -> None:
    runtime = _runtime(clock)
    fetch = ScriptedFetch()

    first = await runtime.run("Tree of thoughts", fetch, _classify)
    second = await runtime.run("tree  of THOUGHTS", fetch, _classify)

    assert fetch.queries == ["Tree of thoughts"]
    assert second == first


async def test_cached_result_is_a_copy_callers_cannot_corrupt(clock: Any) -> None:
    runtime = _runtime(clock)
    fetch = ScriptedFetch()

    first = await runtime.run("q", fetch, _classify)
    first[1]["sources"].clear()
    second = await runtime.run("q", fetch, _classify)

    assert second[1]["sources"] == [{"title": "T", "url": "https://t.example/"}]


async def test_failures_are_not_cached(clock: Any) -> None:
    runtime = _runtime(clock, max_retries=0)
    fetch = ScriptedFetch(ToolCallError("http_error"))

    failed = await runtime.run("q", fetch, _classify)
    succeeded = await runtime.run("q", fetch, _classify)

    assert failed[1]["ok"] is False
    assert succeeded[1]["ok"] is True
    assert len(fetch.queries) == 2


# -- input ------------------------------------------------------------------------------------


async def test_empty_query_is_invalid_input_and_never_fetched(clock: Any) -> None:
    fetch = ScriptedFetch()

    content, artifact = await _runtime(clock).run("  \n ", fetch, _classify)

    assert artifact == {"ok": False, "error_kind": "invalid_input", "sources": []}
    assert content == "probe: invalid input (the query is empty)"
    assert fetch.queries == []


async def test_overlong_query_is_invalid_input(clock: Any) -> None:
    fetch = ScriptedFetch()

    _, artifact = await _runtime(clock).run("word " * 200, fetch, _classify)

    assert artifact["error_kind"] == "invalid_input"
    assert fetch.queries == []


# -- retries ----------------------------------------------------------------------------------


async def test_retryable_failure_is_retried_with_jittered_exponential_backoff(clock: Any) -> None:
    fetch = ScriptedFetch(_rate_limited(), _rate_limited())

    _, artifact = await _runtime(clock, max_retries=2, jitter=0.5).run("q", fetch, _classify)

    assert artifact["ok"] is True
    assert len(fetch.queries) == 3
    # Ceilings 0.5 s then 1.0 s, each scaled by the jitter draw (0.5).
    assert clock.sleeps == [0.25, 0.5]


async def test_retries_are_bounded_by_max_retries(clock: Any) -> None:
    fetch = ScriptedFetch(*[_rate_limited() for _ in range(10)])

    content, artifact = await _runtime(clock, max_retries=2).run("q", fetch, _classify)

    assert len(fetch.queries) == 3
    assert artifact == {"ok": False, "error_kind": "rate_limited", "sources": []}
    assert content == "probe: rate limited, try a different query or tool"


async def test_non_retryable_failure_is_not_retried(clock: Any) -> None:
    fetch = ScriptedFetch(ToolCallError("http_error", detail="HTTP 403"))

    content, artifact = await _runtime(clock, max_retries=5).run("q", fetch, _classify)

    assert len(fetch.queries) == 1
    assert artifact["error_kind"] == "http_error"
    assert "HTTP 403" in content
    assert clock.sleeps == []


async def test_retry_after_is_a_floor_for_the_backoff(clock: Any) -> None:
    fetch = ScriptedFetch(ToolCallError("rate_limited", retryable=True, retry_after_s=4.0))

    _, artifact = await _runtime(clock, jitter=0.1).run("q", fetch, _classify)

    assert artifact["ok"] is True
    assert clock.sleeps == [4.0]


async def test_retries_stop_when_the_backoff_would_pass_the_deadline(clock: Any) -> None:
    fetch = ScriptedFetch(*[_rate_limited() for _ in range(10)])
    runtime = _runtime(clock, timeout_s=1.0, max_retries=5, jitter=0.99)

    _, artifact = await runtime.run("q", fetch, _classify)

    # 0.495 s of backoff fits in 1 s; the next 0.99 s would not.
    assert len(fetch.queries) == 2
    assert clock.sleeps == [0.495]
    assert artifact["error_kind"] == "rate_limited"


async def test_unexpected_exception_becomes_an_internal_failure(clock: Any) -> None:
    fetch = ScriptedFetch(RuntimeError("boom"))

    content, artifact = await _runtime(clock).run("q", fetch, _classify)

    assert artifact == {"ok": False, "error_kind": "internal", "sources": []}
    assert "boom" not in content
    assert len(fetch.queries) == 1


async def test_a_call_that_outlives_the_deadline_times_out(clock: Any) -> None:
    release = threading.Event()
    started = threading.Event()

    def hang(query: str) -> ToolResult:
        started.set()
        release.wait(timeout=10)
        raise AssertionError("never returns in time")

    try:
        content, artifact = await _runtime(clock, timeout_s=0.05).run("q", hang, _classify)
    finally:
        release.set()

    assert started.is_set()
    assert artifact == {"ok": False, "error_kind": "timeout", "sources": []}
    assert content.startswith("probe: timed out")


# -- rate limiter -----------------------------------------------------------------------------


async def test_limiter_spaces_concurrent_calls_by_the_min_interval(clock: Any) -> None:
    clock.advance_on_sleep = False  # every caller asks at the same instant
    limiter = RateLimiter(1.0, clock=clock, sleep=clock.sleep)

    granted = await asyncio.gather(*(limiter.acquire() for _ in range(3)))

    assert granted == [True, True, True]
    assert sorted(clock.sleeps) == [1.0, 2.0]


async def test_limiter_refuses_a_slot_beyond_the_longest_wait(clock: Any) -> None:
    clock.advance_on_sleep = False
    limiter = RateLimiter(5.0, clock=clock, sleep=clock.sleep)

    assert await limiter.acquire(max_wait_s=1.0) is True
    assert await limiter.acquire(max_wait_s=1.0) is False
    # A refusal takes no slot: the next caller still waits 5 s, not 10 s.
    assert await limiter.acquire() is True
    assert clock.sleeps == [5.0]


async def test_limiter_lets_calls_through_once_the_interval_passed(clock: Any) -> None:
    limiter = RateLimiter(1.0, clock=clock, sleep=clock.sleep)

    await limiter.acquire()
    clock.now += 1.5
    await limiter.acquire()

    assert clock.sleeps == []


def test_registry_gives_one_limiter_per_tool_with_the_latest_interval(clock: Any) -> None:
    registry = LimiterRegistry(clock=clock, sleep=clock.sleep)

    first = registry.limiter("arxiv", 3.0)
    again = registry.limiter("arxiv", 4.0)

    assert again is first
    assert first.min_interval_s == 4.0
    assert registry.limiter("wikipedia", 1.0) is not first


async def test_rate_limit_wait_counts_against_the_deadline(clock: Any) -> None:
    clock.advance_on_sleep = False
    runtime = _runtime(clock, timeout_s=2.0)
    slow = replace(runtime, limiter=RateLimiter(10.0, clock=clock, sleep=clock.sleep))
    fetch = ScriptedFetch()

    await slow.run("first", fetch, _classify)
    content, artifact = await slow.run("second", fetch, _classify)

    assert fetch.queries == ["first"]
    assert artifact["error_kind"] == "rate_limited"
    assert content.startswith("probe: rate limited")


# -- the tools' own thread pool ---------------------------------------------------------------


async def test_tool_calls_run_on_the_tools_own_pool(clock: Any) -> None:
    names: list[str] = []

    def fetch(query: str) -> ToolResult:
        names.append(threading.current_thread().name)
        return ScriptedFetch()(query)

    _, artifact = await _runtime(clock).run("q", fetch, _classify)

    assert artifact["ok"] is True
    assert names[0].startswith("tool")


async def test_the_timeout_runs_from_when_a_thread_starts_the_call(clock: Any) -> None:
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tool-test")
    runtime = replace(_runtime(clock, timeout_s=1.0, max_retries=0), threads=pool)
    release = threading.Event()

    def hold(query: str) -> ToolResult:
        release.wait(timeout=10)  # keeps the pool's only thread past the first call's timeout
        return ScriptedFetch()(query)

    first = asyncio.create_task(runtime.run("first", hold, _classify))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(runtime.run("second", ScriptedFetch(), _classify))
    try:
        _, first_artifact = await first  # times out; its thread stays busy until released
        await asyncio.sleep(0.5)  # the second call has now queued longer than its timeout
        release.set()
        _, second_artifact = await second
    finally:
        release.set()
        pool.shutdown(wait=False)

    assert first_artifact["error_kind"] == "timeout"
    assert second_artifact["ok"] is True


# -- single flight ----------------------------------------------------------------------------


class GatedFetch(ScriptedFetch):
    """A fetch that blocks until `gate` is set, so that a call stays in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def __call__(self, query: str) -> ToolResult:
        self.entered.set()
        self.gate.wait(timeout=10)
        return super().__call__(query)


async def _until(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, 10)


async def _one_in_flight_and_one_waiting(
    runtime: ToolRuntime, fetch: GatedFetch, query: str, again: str
) -> tuple[asyncio.Task[ToolResult], asyncio.Task[ToolResult]]:
    """A call of `query` held in `fetch`, and a call of `again` started after it."""
    first = asyncio.create_task(runtime.run(query, fetch, _classify))
    await _until(fetch.entered)
    second = asyncio.create_task(runtime.run(again, fetch, _classify))
    await asyncio.sleep(0)
    return first, second


async def test_identical_calls_in_flight_make_one_call_and_share_its_result(clock: Any) -> None:
    runtime = _runtime(clock)
    fetch = GatedFetch()

    first, second = await _one_in_flight_and_one_waiting(
        runtime, fetch, "Tree of thoughts", "tree of thoughts"
    )
    fetch.gate.set()
    a, b = await asyncio.gather(first, second)

    assert fetch.queries == ["Tree of thoughts"]
    assert a == b
    assert a is not b  # each caller gets its own copy
    assert runtime.flights == {}


async def test_when_the_call_in_flight_is_cancelled_the_waiting_one_goes_to_the_source(
    clock: Any,
) -> None:
    runtime = _runtime(clock)
    fetch = GatedFetch()

    first, second = await _one_in_flight_and_one_waiting(runtime, fetch, "bees", "bees")
    first.cancel()
    fetch.gate.set()
    result = await second

    assert first.cancelled()
    assert result[1]["ok"]
    assert len(fetch.queries) >= 1
    assert runtime.flights == {}


# -- a service that is down, a tool that is throttled --------------------------------------------


async def test_an_unreachable_service_fails_at_once_with_the_same_observation_until_its_time(
    clock: Any,
) -> None:
    runtime = _runtime(clock, max_retries=0)
    fetch = ScriptedFetch(ToolCallError("network", detail="dns"))

    first = await runtime.run("q", fetch, _classify)
    clock.now += runtime.down_s - 1
    meanwhile = await runtime.run("another query", fetch, _classify)
    clock.now += 1
    after = await runtime.run("q", fetch, _classify)

    assert first[1]["error_kind"] == "network"
    assert meanwhile == first  # the same observation, at once
    assert fetch.queries == ["q", "q"]  # nothing fetched while it was marked down
    assert after[1]["ok"] is True


async def test_a_call_that_would_queue_behind_others_for_its_slot_is_told_the_tool_is_throttled(
    clock: Any,
) -> None:
    runtime = replace(_runtime(clock), limiter=RateLimiter(1.0, clock=clock, sleep=clock.sleep))
    fetch = ScriptedFetch()
    clock.advance_on_sleep = False  # all four ask for their slot at the same instant

    results = await asyncio.gather(*(runtime.run(f"q{i}", fetch, _classify) for i in range(4)))

    # Slots at 0, 1 and 2 s are waited for (pacing: two intervals, at least THROTTLE_WAIT_S);
    # the fourth, 3 s away, is refused at once, without a slot taken or a fetch.
    assert [r[1]["ok"] for r in results] == [True, True, True, False]
    assert results[3][1]["error_kind"] == "rate_limited"
    assert results[3][0] == "probe: rate limited, try a different query or tool"
    assert sorted(fetch.queries) == ["q0", "q1", "q2"]
    assert sorted(clock.sleeps) == [1.0, 2.0]
