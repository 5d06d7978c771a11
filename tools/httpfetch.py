"""The HTTP door of the `requests`-based tools (arxiv, wikipedia): timeout, status, body checks.

Neither library sets a timeout or reads the HTTP status the way we need (`wikipedia` calls
`.json()` on a 403 page), so their requests go through an `HttpFetcher` instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import requests

from tools.runtime import ToolCallError

logger = logging.getLogger(__name__)

BodyCheck = Callable[[requests.Response], None]
"""Raises `ToolCallError("bad_response")` when a 2xx body is not what the library can read."""

RETRY_AFTER_MAX_S = 60.0


class HttpFetcher:
    """`get` with a timeout on every request, HTTP errors raised as classified `ToolCallError`s;
    its signature is `requests.get`'s, so it stands in for the `requests` module where a
    library calls only that."""

    def __init__(
        self,
        session: requests.Session,
        *,
        timeout_s: float,
        check_body: BodyCheck | None = None,
        https_only: bool = False,
    ) -> None:
        self._session = session
        self._timeout_s = timeout_s
        self._check_body = check_body
        self._https_only = https_only

    def get(
        self,
        url: str,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """GET `url` (over https for `https_only`, whatever its scheme says); raise
        `ToolCallError` on a non-2xx status or an unreadable body."""
        if self._https_only and url.startswith("http://"):
            url = "https://" + url.removeprefix("http://")
        response = self._session.get(
            url, params=params, headers=dict(headers or {}), timeout=self._timeout_s
        )
        if not 200 <= response.status_code < 300:
            raise status_error(response.status_code, response.headers.get("Retry-After"))
        if self._check_body is not None:
            self._check_body(response)
        return response


def status_error(status: int, retry_after: str | None = None) -> ToolCallError:
    """Classify an HTTP status: 429 rate limited, 408/5xx retryable, other 4xx final."""
    detail = f"HTTP {status}"
    wait_s = parse_retry_after(retry_after)
    if status == 429:
        return ToolCallError("rate_limited", retryable=True, detail=detail, retry_after_s=wait_s)
    if status == 408 or status >= 500:
        return ToolCallError("http_error", retryable=True, detail=detail, retry_after_s=wait_s)
    return ToolCallError("http_error", detail=detail)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header, capped; None when absent or an HTTP date.

    A date would need a trustworthy wall clock; the jittered backoff is used instead.
    """
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S)


def classify_requests_error(exc: Exception) -> ToolCallError | None:
    """Classify an exception from `requests`; None when it is not one of its transport errors."""
    # ConnectTimeout is both a Timeout and a ConnectionError: a timeout, so checked first.
    if isinstance(exc, requests.Timeout):
        return ToolCallError("timeout", retryable=True, detail=type(exc).__name__)
    if isinstance(exc, requests.JSONDecodeError):
        return ToolCallError("bad_response", detail="body is not JSON")
    if isinstance(exc, requests.ConnectionError):
        # DNS failures and refused connections: retrying within one call rarely helps.
        return ToolCallError("network", detail=type(exc).__name__)
    if isinstance(exc, requests.RequestException):
        return ToolCallError("network", detail=type(exc).__name__)
    return None
