"""Behaviour every tool shares: thread + deadline, bounded jittered retries, rate limit, cache.

`ToolRuntime.run` is the single path from a tool's coroutine to its blocking library call. It
never raises (except cancellation): every failure becomes a `results.failure` observation.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Generic, TypeVar

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from agents.errors import ToolError
from tools.results import FailureKind, ToolResult, failure, squash

logger = logging.getLogger(__name__)

# A run that asks for `use_cache=false` sets this to False around its tool calls: the call then
# goes to the source (and refreshes the cache) instead of reading it.
USE_RESULT_CACHE: ContextVar[bool] = ContextVar("use_result_cache", default=True)

Clock = Callable[[], float]
"""Monotonic seconds."""
Sleep = Callable[[float], Awaitable[None]]
Jitter = Callable[[], float]
"""Uniform in [0, 1): scales each backoff delay ("full jitter")."""

QUERY_MAX_CHARS = 400
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0

V = TypeVar("V")


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


Classifier = Callable[[Exception], ToolCallError]
"""Maps an exception a library raised into a `ToolCallError` (unknown ones to "internal")."""


class TtlCache(Generic[V]):
    """A thread-safe in-memory LRU cache whose entries expire; shared by every run in a process."""

    def __init__(self, *, max_entries: int = 2048, clock: Clock = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        """The live value under `key`, or None (an expired entry is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, value = entry
            if expires_at <= self._clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: V, ttl_s: float) -> None:
        """Store `value` for `ttl_s` seconds (nothing is stored when `ttl_s` <= 0)."""
        if ttl_s <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock() + ttl_s, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def cache_key(tool: str, scope: str, query: str, *, casefold: bool = True) -> str:
    """The cache key of one call: tool, the settings that change its answer, normalised query."""
    normalised = squash(query)
    if casefold:
        normalised = normalised.casefold()
    return f"{tool}\x1f{scope}\x1f{normalised}"


class RateLimiter:
    """Spaces the starts of calls at least `min_interval_s` apart.

    Slots are reserved under a thread lock (no awaits inside it), so it is safe under asyncio
    concurrency, across threads, and across event loops; waiting happens outside the lock.
    """

    def __init__(self, min_interval_s: float, *, clock: Clock, sleep: Sleep) -> None:
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._sleep = sleep
        self._next_start = float("-inf")
        self._lock = threading.Lock()

    async def acquire(self, max_wait_s: float = float("inf")) -> bool:
        """Wait for this call's slot; False (no slot taken) when it is over `max_wait_s` away."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next_start)
            wait = start - now
            if wait > max_wait_s:
                return False
            self._next_start = start + self.min_interval_s
        if wait > 0:
            await self._sleep(wait)
        return True


class LimiterRegistry:
    """One `RateLimiter` per tool name; the process-wide registry is `PROCESS_LIMITERS`."""

    def __init__(self, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._limiters: dict[str, RateLimiter] = {}
        self._lock = threading.Lock()

    def limiter(self, name: str, min_interval_s: float) -> RateLimiter:
        """The limiter for `name`, created on first use; the latest interval asked for wins."""
        with self._lock:
            limiter = self._limiters.get(name)
            if limiter is None:
                limiter = RateLimiter(min_interval_s, clock=self._clock, sleep=self._sleep)
                self._limiters[name] = limiter
            limiter.min_interval_s = min_interval_s
            return limiter


# Shared by every run (and every `build_tools` call) in the process, so that two concurrent runs
# cannot call one service twice as fast, and one run's search result serves the next.
PROCESS_LIMITERS = LimiterRegistry()
PROCESS_CACHE: TtlCache[ToolResult] = TtlCache()


@dataclass(frozen=True, slots=True)
class ToolRuntime:
    """The shared machinery one tool calls through; see `run`."""

    name: str
    timeout_s: float
    max_retries: int
    max_chars: int
    cache_ttl_s: float
    limiter: RateLimiter
    cache: TtlCache[ToolResult]
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep
    jitter: Jitter = random.random
    scope: str = ""
    """Settings that change the answer (region, language, ...): part of the cache key."""
    casefold_keys: bool = True

    async def run(
        self, query: str, fetch: Callable[[str], ToolResult], classify: Classifier
    ) -> ToolResult:
        """Answer `query` with `fetch` (blocking, run in a thread), from the cache when possible.

        `timeout_s` bounds the whole call: rate-limit waits, every attempt and every backoff.
        Only retryable failures are retried, at most `max_retries` times.
        """
        clean = squash(query)
        if not clean:
            return failure(self.name, "invalid_input", "the query is empty")
        if len(clean) > QUERY_MAX_CHARS:
            detail = f"the query is longer than {QUERY_MAX_CHARS} characters"
            return failure(self.name, "invalid_input", detail)
        key = cache_key(self.name, self.scope, clean, casefold=self.casefold_keys)
        cached = self.cache.get(key) if USE_RESULT_CACHE.get() else None
        if cached is not None:
            logger.debug("tool %s: cache hit for %r", self.name, clean)
            return copy.deepcopy(cached)
        result = await self._call(clean, fetch, classify)
        if result[1]["ok"]:
            self.cache.put(key, copy.deepcopy(result), self.cache_ttl_s)
        return result

    async def _call(
        self, query: str, fetch: Callable[[str], ToolResult], classify: Classifier
    ) -> ToolResult:
        deadline = self.clock() + self.timeout_s
        attempt = 0
        while True:
            outcome = await self._attempt(query, fetch, classify, deadline)
            if not isinstance(outcome, ToolCallError):
                return outcome
            error = outcome
            if error.kind == "internal":
                logger.error("tool %s: unexpected failure for %r", self.name, query, exc_info=error)
            if not error.retryable or attempt >= self.max_retries:
                break
            delay = self._backoff_s(attempt, error)
            if self.clock() + delay >= deadline:
                logger.info("tool %s: no time left to retry %r after %s", self.name, query, error)
                break
            attempt += 1
            logger.info(
                "tool %s: attempt %s failed (%s); retrying in %.2fs",
                self.name,
                attempt,
                error,
                delay,
            )
            await self.sleep(delay)
        logger.warning(
            "tool %s: gave up on %r after %s attempt(s): %s", self.name, query, attempt + 1, error
        )
        return failure(self.name, error.kind, error.detail)

    def _backoff_s(self, attempt: int, error: ToolCallError) -> float:
        """Full jitter on an exponential ceiling; a server's Retry-After is a floor."""
        ceiling = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** min(attempt, 16))
        delay: float = ceiling * self.jitter()
        if error.retry_after_s is not None:
            delay = max(delay, error.retry_after_s)
        return delay

    async def _attempt(
        self,
        query: str,
        fetch: Callable[[str], ToolResult],
        classify: Classifier,
        deadline: float,
    ) -> ToolResult | ToolCallError:
        if not await self.limiter.acquire(max_wait_s=deadline - self.clock()):
            return ToolCallError("rate_limited", detail="local rate limit: too many calls queued")
        remaining = deadline - self.clock()
        if remaining <= 0:
            return ToolCallError("timeout", detail="deadline passed while waiting for a slot")
        try:
            # The thread cannot be cancelled; every library call also carries its own socket
            # timeout so an abandoned thread ends on its own.
            return await asyncio.wait_for(asyncio.to_thread(fetch, query), timeout=remaining)
        except TimeoutError:
            return ToolCallError("timeout", retryable=True, detail=f"no answer in {remaining:.1f}s")
        except ToolCallError as exc:
            return exc
        except Exception as exc:
            error = classify(exc)
            error.__cause__ = exc  # keeps the library's traceback for the log
            return error


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
