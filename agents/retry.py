"""Which failures are worth retrying, and a bounded, jittered retry loop for model calls."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
from langchain_core.exceptions import ModelError as ProviderModelError

logger = logging.getLogger(__name__)

T = TypeVar("T")

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def is_retryable(exc: BaseException) -> bool:
    """True for rate limits, server errors, timeouts and connection failures; never for a
    request the provider rejected (400, 401, 403, 404) or for our own errors."""
    if isinstance(exc, ProviderModelError):
        return exc.is_retryable
    if isinstance(exc, TimeoutError | httpx.TimeoutException | httpx.TransportError):
        return True
    if isinstance(exc, ConnectionError):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    return isinstance(status, int) and status in _RETRYABLE_STATUS


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    base_delay_s: float,
    what: str,
) -> T:
    """Run `call`, retrying retryable failures up to `retries` times with jittered backoff."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as e:
            if attempt >= retries or not is_retryable(e):
                raise
            delay = base_delay_s * (2**attempt) * (0.5 + random.random())
            attempt += 1
            logger.warning(
                "%s failed (%s); retry %d/%d in %.2fs",
                what,
                type(e).__name__,
                attempt,
                retries,
                delay,
            )
            await asyncio.sleep(delay)
