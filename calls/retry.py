"""The one retry implementation, shared by model calls (`calls.policy`) and tools
(`tools.runtime`): which failures are worth another attempt, what the server said about when
to come back (Gemini's `google.rpc.RetryInfo.retryDelay`, `Retry-After`), jittered exponential
backoff, and the bounded retry loop itself."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from langchain_core.exceptions import ModelError as ProviderModelError

from calls.aimd import parse_duration_s

T = TypeVar("T")

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_RETRY_INFO = "google.rpc.RetryInfo"


def _google_sdk_errors() -> dict[str, tuple[type[BaseException], ...]]:
    """The google-genai SDK's own error classes: it sends HTTP through httpx2, a fork of httpx
    with its own exceptions, and has its own unreadable-response error."""
    try:
        import httpx2
        from google.genai.errors import UnknownApiResponseError
    except ImportError:
        return {"transport": (), "timeout": (), "unreadable": ()}
    return {
        "transport": (httpx2.TransportError,),
        "timeout": (httpx2.TimeoutException,),
        "unreadable": (UnknownApiResponseError,),
    }


_SDK = _google_sdk_errors()
TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    httpx.TimeoutException,
    *_SDK["timeout"],
)
# A 200 whose body is not JSON: a response cut short on the way, worth another attempt.
UNREADABLE_ERRORS: tuple[type[BaseException], ...] = (json.JSONDecodeError, *_SDK["unreadable"])
_TRANSIENT: tuple[type[BaseException], ...] = (
    ConnectionError,
    httpx.TransportError,
    *_SDK["transport"],
    *TIMEOUT_ERRORS,
    *UNREADABLE_ERRORS,
)


def _chain(error: BaseException, depth: int = 6) -> list[BaseException]:
    # Provider wrappers (langchain-google-genai's GoogleRateLimitError) drop the HTTP status and
    # body but chain the SDK error that has them.
    out: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and len(out) < depth:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def status_of(error: BaseException) -> int | None:
    """The HTTP status a failure carries (on it or on an error it was raised from)."""
    for item in _chain(error):
        status = getattr(item, "status_code", None) or getattr(item, "code", None)
        if isinstance(status, int) and 100 <= status < 600:
            return status
    return None


def is_retryable(exc: BaseException) -> bool:
    """True for rate limits, server errors, timeouts, connection failures and unreadable
    responses; never for a request the provider rejected (400, 401, 403, 404) or our errors."""
    if isinstance(exc, ProviderModelError):
        return exc.is_retryable
    if isinstance(exc, _TRANSIENT):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    return isinstance(status, int) and status in _RETRYABLE_STATUS


def is_rate_limit(exc: BaseException) -> bool:
    """True for a provider's "too many requests" (HTTP 429 / RESOURCE_EXHAUSTED)."""
    from langchain_core.exceptions import ModelRateLimitError

    return isinstance(exc, ModelRateLimitError) or status_of(exc) == 429


def failed_for_rate(error: BaseException) -> bool:
    """Whether a failed call was refused for its rate: a 429 (on the error or one it was raised
    from), or Gemini's RESOURCE_EXHAUSTED in the text of either (the call policy's `ModelError`
    names no status)."""
    return is_rate_limit(error) or any("RESOURCE_EXHAUSTED" in str(e) for e in _chain(error))


def retry_delay_from_body(body: Any) -> float | None:
    """`retryDelay` of a Google error body's `google.rpc.RetryInfo` detail, in seconds."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, dict):
        return None
    error = body.get("error", body)
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith(_RETRY_INFO):
            return parse_duration_s(detail.get("retryDelay"))
    return None


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """An HTTP `Retry-After` header (seconds, or an HTTP date) in seconds from now."""
    if value is None:
        return None
    seconds = parse_duration_s(value.strip().removesuffix("s") if value.strip() else value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_after_s(error: BaseException) -> float | None:
    """When the server asked us to come back: Gemini's RetryInfo in the error body first, then
    a `Retry-After` header, then a `retry_after` attribute some SDKs set."""
    for item in _chain(error):
        delay = retry_delay_from_body(getattr(item, "details", None))
        if delay is not None:
            return delay
        response = getattr(item, "response", None)
        headers = getattr(response, "headers", None)
        if headers is not None:
            try:
                header = headers.get("retry-after")
            except AttributeError:
                header = None
            delay = parse_retry_after(header if isinstance(header, str) else None)
            if delay is not None:
                return delay
        attribute = getattr(item, "retry_after", None)
        if isinstance(attribute, int | float) and not isinstance(attribute, bool):
            return max(0.0, float(attribute))
    return None


def describe_failure(error: BaseException, *, timeout_s: float, attempts: int) -> str:
    """What went wrong, safe to show a user: the kind and HTTP status, never provider text."""
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    status = status_of(error)
    if isinstance(error, TIMEOUT_ERRORS):
        return f"timed out after {timeout_s:g}s ({tries})"
    if status == 429:
        return f"was rate limited by the provider (HTTP 429, {tries})"
    if status is not None and status >= 500:
        return f"hit a provider server error (HTTP {status}, {tries})"
    if status is not None:
        return f"was rejected by the provider (HTTP {status}; not retried)"
    if isinstance(error, UNREADABLE_ERRORS):
        return f"got an unreadable response from the provider ({tries})"
    if is_retryable(error):
        return f"could not reach the provider ({type(error).__name__}, {tries})"
    return f"failed ({type(error).__name__}; not retried)"


@dataclass(frozen=True)
class Backoff:
    """Full jitter on an exponential ceiling; a server's hint is a floor."""

    base_s: float
    max_s: float = 30.0
    jitter: Callable[[], float] = random.random

    def delay_s(self, attempt: int, hint_s: float | None = None) -> float:
        ceiling = min(self.max_s, self.base_s * 2 ** min(attempt, 16))
        delay: float = ceiling * self.jitter()
        return max(delay, hint_s) if hint_s is not None else delay


@dataclass(frozen=True)
class Verdict:
    """What to do after a failed attempt."""

    retry: bool
    counted: bool = True
    """Uses up one of the retries. A 429 the rate limiter absorbs does not: it waits for the
    limiter instead, bounded by `patience_s`."""
    hint_s: float | None = None
    """The server's wish on when to come back: the backoff's floor."""


RetryLog = Callable[[Exception, int, float], None]


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    judge: Callable[[Exception], Verdict],
    *,
    max_retries: int,
    backoff: Backoff,
    deadline: float | Callable[[], float] = math.inf,
    patience_s: float = math.inf,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_retry: RetryLog | None = None,
) -> T:
    """Run `attempt` until it succeeds; re-raise the last failure when `judge` says it is not
    worth another try, `max_retries` counted retries are spent, the next backoff would pass
    `deadline` (a time, or a function giving it: it may move), or uncounted retries have gone
    on for `patience_s`."""
    counted = 0
    first_uncounted: float | None = None
    while True:
        try:
            return await attempt()
        except Exception as e:
            verdict = judge(e)
            if not verdict.retry:
                raise
            now = clock()
            if verdict.counted:
                if counted >= max_retries:
                    raise
                delay = backoff.delay_s(counted, verdict.hint_s)
                counted += 1
            else:
                first_uncounted = now if first_uncounted is None else first_uncounted
                if now - first_uncounted >= patience_s:
                    raise
                delay = 0.0
            if now + delay >= (deadline() if callable(deadline) else deadline):
                raise
            if on_retry is not None:
                on_retry(e, counted, delay)
            if delay > 0:
                await sleep(delay)
