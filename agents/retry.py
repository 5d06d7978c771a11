"""Which model-call failures are worth retrying. The retry loop itself is the model layer's
call policy (`agents.models.ResilientChatModel`); nothing else retries model calls."""

from __future__ import annotations

import json

import httpx
from langchain_core.exceptions import ModelError as ProviderModelError

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


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


def is_retryable(exc: BaseException) -> bool:
    """True for rate limits, server errors, timeouts, connection failures and unreadable
    responses; never for a request the provider rejected (400, 401, 403, 404) or our errors."""
    if isinstance(exc, ProviderModelError):
        return exc.is_retryable
    if isinstance(exc, _TRANSIENT):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    return isinstance(status, int) and status in _RETRYABLE_STATUS
