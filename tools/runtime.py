"""Behaviour every tool shares: a thread of the tools' own bounded pool, a deadline, bounded
jittered retries, a rate limit and a cache.

`ToolRuntime.run` is the single path from a tool's coroutine to its blocking library call. It
never raises (except cancellation): every failure becomes a `results.failure` observation.
Retries are the model calls' own implementation (`calls.retry.retrying`) and spacing the one
token bucket (`calls.ratelimit.TokenBucket`, behind `RateLimiter`), so tools and models back
off by the same rules. With Redis, the service hands the tools limiters that share the
spacing with every process instead (`app.backends.tool_limiter_redis`).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from calls.cache import USE_RESULT_CACHE
from calls.errors import ToolError
from calls.retry import Backoff, Verdict, retrying
from calls.sources import SOURCE_FILTER
from tools.result_cache import TtlCache as TtlCache  # re-exported: tools and tests use it here
from tools.result_cache import cache_key as cache_key
from tools.results import FailureKind, ToolResult, failure, squash

# Re-exported too: the tools, the service and the tests take them from here.
from tools.spacing import DOWN_S as DOWN_S
from tools.spacing import PROCESS_LIMITERS as PROCESS_LIMITERS
from tools.spacing import PROCESS_OUTAGES as PROCESS_OUTAGES
from tools.spacing import Clock as Clock
from tools.spacing import LimiterRegistry as LimiterRegistry
from tools.spacing import RateLimiter as RateLimiter
from tools.spacing import Sleep as Sleep
from tools.spacing import ToolLimiter as ToolLimiter
from tools.spacing import ToolLimiters as ToolLimiters
from tools.spacing import ToolOutages as ToolOutages

logger = logging.getLogger(__name__)


Jitter = Callable[[], float]
"""Uniform in [0, 1): scales each backoff delay ("full jitter")."""

QUERY_MAX_CHARS = 400
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0


class ToolCallError(ToolError):
    """One failed attempt, already classified: what kind, and whether another try may help."""

    def __init__(
        self,
        kind: FailureKind,
        *,
        retryable: bool = False,
        detail: str = "",
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind: FailureKind = kind
        self.retryable = retryable
        self.detail = detail
        self.retry_after_s = retry_after_s


AsyncFetch = Callable[[str], Awaitable[ToolResult]]
"""A source's answer to a cleaned query, as a coroutine (`ToolRuntime.run_async`)."""
_Attempt = Callable[[str, float, list[float]], Awaitable[ToolResult]]
"""One attempt at a cleaned query within `budget_s`; it may push the shared deadline back."""

Classifier = Callable[[Exception], ToolCallError]
"""Maps an exception a library raised into a `ToolCallError` (unknown ones to "internal")."""


_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def tool_threads(max_workers: int = 8) -> ThreadPoolExecutor:
    """The process's thread pool for blocking tool calls (one per size): tools never queue
    behind other work in asyncio's default pool, and at most `max_workers` run at once."""
    with _pools_lock:
        pool = _pools.get(max_workers)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers, thread_name_prefix="tool")
            _pools[max_workers] = pool
        return pool


# Shared by every run (and every `build_tools` call) in the process: one run's search result
# serves the next (the limiters and outages shared alike are tools/spacing.py's).
PROCESS_CACHE: TtlCache[ToolResult] = TtlCache()
THROTTLE_WAIT_S = 2.0
"""With the tool's own spacing: a call waits for its rate-limit slot at most this long or two
of the tool's intervals, whichever is longer (its turn behind one other call is pacing; behind
more, the tool is throttled). Past that it fails at once as rate limited, so that the model
may use another tool instead of holding its branch."""


@dataclass(frozen=True, slots=True)
class ToolRuntime:
    """The shared machinery one tool calls through; see `run`."""

    name: str
    timeout_s: float
    max_retries: int
    max_chars: int
    cache_ttl_s: float
    limiter: ToolLimiter
    cache: TtlCache[ToolResult]
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep
    jitter: Jitter = random.random
    scope: str = ""
    """Settings that change the answer (region, language, ...): part of the cache key."""
    casefold_keys: bool = True
    threads: ThreadPoolExecutor = field(default_factory=tool_threads)
    flights: dict[tuple[int, str], asyncio.Future[ToolResult]] = field(default_factory=dict)
    """The calls in flight by event loop and cache key (`run`: single flight)."""
    filters_sources: bool = False
    """The tool applies the run's source filter (`calls.sources`): its results are cached
    apart per filter."""
    outages: ToolOutages = field(default_factory=ToolOutages)
    down_s: float = DOWN_S
    throttle_wait_s: float = THROTTLE_WAIT_S

    def query_tool(
        self,
        description: str,
        args_schema: type[BaseModel],
        fetch: Callable[[str], ToolResult],
        classify: Classifier,
    ) -> BaseTool:
        """The tool of this runtime's name answering a query with `fetch` under the runtime
        (`run`: cache, spacing, deadline and retries), its failures told apart by `classify`."""

        async def answer(query: str) -> ToolResult:
            return await self.run(query, fetch, classify)

        return research_tool(
            name=self.name, description=description, args_schema=args_schema, coroutine=answer
        )

    def async_query_tool(
        self,
        description: str,
        args_schema: type[BaseModel],
        fetch: AsyncFetch,
        classify: Classifier,
    ) -> BaseTool:
        """`query_tool` for a source that is a coroutine (a database query), awaited on the
        event loop instead of a thread (`run_async`)."""

        async def answer(query: str) -> ToolResult:
            return await self.run_async(query, fetch, classify)

        return research_tool(
            name=self.name, description=description, args_schema=args_schema, coroutine=answer
        )

    async def run_async(self, query: str, fetch: AsyncFetch, classify: Classifier) -> ToolResult:
        """`run` for a coroutine `fetch`: the same cache, single flight, spacing, deadline and
        retries; each attempt awaited within what is left of the deadline."""

        async def attempt(clean: str, budget_s: float, deadline: list[float]) -> ToolResult:
            async with asyncio.timeout(budget_s):
                return await fetch(clean)

        return await self._answer(query, attempt, classify)

    async def run(
        self, query: str, fetch: Callable[[str], ToolResult], classify: Classifier
    ) -> ToolResult:
        """Answer `query` with `fetch` (blocking, run in a thread), from the cache when possible.
        Identical calls at the same time (same cache key, on one event loop) make one call:
        the first goes to the source, the others share its result (a failure too); if the first
        is cancelled, the next one goes to the source itself.

        `timeout_s` bounds the whole call: rate-limit waits, every attempt and every backoff,
        but not the time an attempt waits for a free thread of the pool. Only retryable
        failures are retried, at most `max_retries` times.
        """

        async def attempt(clean: str, budget_s: float, deadline: list[float]) -> ToolResult:
            return await self._in_pool(fetch, clean, budget_s, deadline)

        return await self._answer(query, attempt, classify)

    async def _answer(self, query: str, fetch: _Attempt, classify: Classifier) -> ToolResult:
        clean = squash(query)
        if not clean:
            return failure(self.name, "invalid_input", "the query is empty")
        if len(clean) > QUERY_MAX_CHARS:
            detail = f"the query is longer than {QUERY_MAX_CHARS} characters"
            return failure(self.name, "invalid_input", detail)
        scope = self.scope
        sources = SOURCE_FILTER.get() if self.filters_sources else None
        if sources is not None:
            scope = f"{scope}|{sources.key()}"
        key = cache_key(self.name, scope, clean, casefold=self.casefold_keys)
        cached = self.cache.get(key) if USE_RESULT_CACHE.get() else None
        if cached is not None:
            logger.debug("tool %s: cache hit for %r", self.name, clean)
            return copy.deepcopy(cached)
        down = self.outages.current(self.name, self.clock())
        if down is not None:
            logger.debug("tool %s: marked down; %r fails at once", self.name, clean)
            return down
        return await self._single_flight(key, clean, query, fetch, classify)

    async def _single_flight(
        self, key: str, clean: str, query: str, fetch: _Attempt, classify: Classifier
    ) -> ToolResult:
        """The call for `key`: shared with an identical one in flight, or made here (its
        result cached when it succeeded, its tool marked down when the service was
        unreachable)."""
        flight = (id(asyncio.get_running_loop()), key)
        leader = self.flights.get(flight)
        if leader is not None:
            # Single flight: an identical call in flight (another branch's) answers this one.
            try:
                shared = await asyncio.shield(leader)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # this call was cancelled, not the one it waited for
                return await self._answer(query, fetch, classify)  # the leader was: go alone
            logger.debug("tool %s: shared an identical call in flight for %r", self.name, clean)
            return copy.deepcopy(shared)
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self.flights[flight] = future
        try:
            result = await self._call(clean, fetch, classify)
        except BaseException:
            future.cancel()
            raise
        finally:
            self.flights.pop(flight, None)
        future.set_result(copy.deepcopy(result))
        if result[1]["ok"]:
            self.cache.put(key, copy.deepcopy(result), self.cache_ttl_s)
        elif result[1]["error_kind"] == "network" and self.down_s > 0:
            self.outages.mark(self.name, self.clock() + self.down_s, result)
            logger.warning(
                "tool %s: its service is unreachable; calls fail at once for %.0fs",
                self.name,
                self.down_s,
            )
        return result

    async def _call(self, query: str, fetch: _Attempt, classify: Classifier) -> ToolResult:
        # A list so that an attempt can push the deadline back by its time in the pool's queue.
        deadline = [self.clock() + self.timeout_s]
        tries = 0

        async def attempt() -> ToolResult:
            nonlocal tries
            tries += 1
            return await self._attempt(query, fetch, classify, deadline)

        def judge(error: Exception) -> Verdict:
            if not isinstance(error, ToolCallError):
                return Verdict(retry=False)
            if error.kind == "internal":
                logger.error("tool %s: unexpected failure for %r", self.name, query, exc_info=error)
            return Verdict(retry=error.retryable, hint_s=error.retry_after_s)

        def log_retry(error: Exception, retries: int, delay: float) -> None:
            logger.info(
                "tool %s: attempt %s failed (%s); retrying in %.2fs",
                self.name,
                retries,
                error,
                delay,
            )

        try:
            return await retrying(
                attempt,
                judge,
                max_retries=self.max_retries,
                backoff=Backoff(BACKOFF_BASE_S, BACKOFF_MAX_S, self.jitter),
                deadline=lambda: deadline[0],
                clock=self.clock,
                sleep=self.sleep,
                on_retry=log_retry,
            )
        except ToolCallError as error:
            logger.warning(
                "tool %s: gave up on %r after %s attempt(s): %s", self.name, query, tries, error
            )
            return failure(self.name, error.kind, error.detail)

    async def _attempt(
        self, query: str, fetch: _Attempt, classify: Classifier, deadline: list[float]
    ) -> ToolResult:
        pacing = max(self.throttle_wait_s, 2 * self.limiter.min_interval_s)
        patience = min(deadline[0] - self.clock(), pacing)
        if not await self.limiter.acquire(max_wait_s=patience):
            raise ToolCallError(
                "rate_limited",
                detail=f"throttled: its next free slot is more than {patience:.0f}s away",
            )
        remaining = deadline[0] - self.clock()
        if remaining <= 0:
            raise ToolCallError("timeout", detail="deadline passed while waiting for a slot")
        try:
            return await fetch(query, remaining, deadline)
        except TimeoutError as exc:
            raise ToolCallError(
                "timeout", retryable=True, detail=f"no answer in {remaining:.1f}s"
            ) from exc
        except ToolCallError:
            raise
        except Exception as exc:
            error = classify(exc)
            raise error from exc  # keeps the library's traceback for the log

    async def _in_pool(
        self,
        fetch: Callable[[str], ToolResult],
        query: str,
        budget_s: float,
        deadline: list[float],
    ) -> ToolResult:
        """`fetch(query)` on the tools' pool, timed from when a thread really starts it."""
        loop = asyncio.get_running_loop()
        started = asyncio.Event()
        context = contextvars.copy_context()

        def work() -> ToolResult:
            loop.call_soon_threadsafe(started.set)
            return context.run(fetch, query)

        queued_at = time.monotonic()
        future = asyncio.wrap_future(self.threads.submit(work))
        try:
            await started.wait()
            deadline[0] += time.monotonic() - queued_at
            # The thread cannot be cancelled; every library call also carries its own socket
            # timeout so an abandoned thread ends on its own.
            async with asyncio.timeout(budget_s):
                return await future
        except BaseException:
            future.cancel()  # a call still queued never starts
            raise


def research_tool(
    *,
    name: str,
    description: str,
    args_schema: type[BaseModel],
    coroutine: Callable[[str], Awaitable[ToolResult]],
) -> BaseTool:
    """An async LangChain tool returning `(content, artifact)`.

    Arguments that do not match the schema never reach the tool; LangChain answers them with a
    ToolMessage (status "error", no artifact) naming the tool instead of raising.
    """

    def invalid_arguments(error: ValidationError | object) -> str:
        logger.info("tool %s: arguments rejected: %s", name, error)
        return f'{name}: invalid input, call it with arguments like {{"query": "..."}}'

    return StructuredTool.from_function(
        coroutine=coroutine,
        name=name,
        description=description,
        args_schema=args_schema,
        response_format="content_and_artifact",
        handle_validation_error=invalid_arguments,
    )
