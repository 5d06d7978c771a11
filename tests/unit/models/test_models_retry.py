"""When the provider asks us to come back: Gemini's RetryInfo.retryDelay, Retry-After, and the
shared retry loop's rules (counted retries, uncounted 429s, deadline)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest
from google.genai.errors import ClientError
from langchain_core.exceptions import ModelRateLimitError

from calls.aimd import parse_duration_s
from calls.retry import (
    Backoff,
    Verdict,
    is_rate_limit,
    parse_retry_after,
    retry_after_s,
    retry_delay_from_body,
    retrying,
)
from testkit.gemini_sim import Quota


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("27s", 27.0),
        ("0.419s", 0.419),
        ("1.56152477s", 1.56152477),
        ({"seconds": 12, "nanos": 500_000_000}, 12.5),
        (3, 3.0),
        ("soon", None),
        ("-1s", None),
        (None, None),
    ],
)
def test_durations_parse_as_protobuf_json_writes_them(value: object, seconds: float | None) -> None:
    assert parse_duration_s(value) == (pytest.approx(seconds) if seconds is not None else None)


def test_the_retry_delay_is_read_from_gemini_s_429_body() -> None:
    body = Quota(rps=6.0).body("gemini-2.5-flash", 0.419)

    assert retry_delay_from_body(body) == pytest.approx(0.419)
    assert retry_delay_from_body({"error": {"code": 429, "details": []}}) is None


def test_the_retry_delay_is_found_through_langchain_s_wrapper() -> None:
    body = Quota(rps=6.0).body("gemini-2.5-flash", 27.0)
    try:
        raise ClientError(429, body, None)
    except ClientError as cause:
        wrapped = ModelRateLimitError("Error calling model 'gemini-2.5-flash'")
        wrapped.__cause__ = cause

    assert is_rate_limit(wrapped)
    assert retry_after_s(wrapped) == pytest.approx(27.0)


def test_retry_after_headers_are_honoured_for_other_providers() -> None:
    class ProviderError(Exception):
        def __init__(self, response: httpx.Response) -> None:
            super().__init__("429")
            self.response = response
            self.status_code = response.status_code

    error = ProviderError(httpx.Response(429, headers={"Retry-After": "7"}))

    assert is_rate_limit(error)
    assert retry_after_s(error) == 7.0


def test_an_http_date_in_retry_after_is_seconds_from_now() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == 30.0
    assert parse_retry_after("whenever") is None


# -- the retry loop ---------------------------------------------------------------------------


class Sleeps:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)


def _failing(*errors: Exception) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls: list[int] = []
    queue = list(errors)

    async def attempt() -> str:
        calls.append(1)
        if queue:
            raise queue.pop(0)
        return "ok"

    return calls, attempt


async def test_uncounted_failures_do_not_use_up_the_retries() -> None:
    calls, attempt = _failing(*[ValueError("429")] * 5, KeyError("503"))
    sleep = Sleeps()

    def judge(error: Exception) -> Verdict:
        return Verdict(retry=True, counted=isinstance(error, KeyError))

    out = await retrying(
        attempt,
        judge,
        max_retries=1,
        backoff=Backoff(1.0, jitter=lambda: 0.5),
        sleep=sleep,
    )

    assert out == "ok"
    assert len(calls) == 7
    assert sleep.slept == [0.5]  # only the counted retry backs off; the limiter paces the rest


async def test_uncounted_retries_end_after_the_patience() -> None:
    now = [0.0]
    calls, attempt = _failing(*[ValueError("429")] * 10)

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    with pytest.raises(ValueError, match="429"):
        await retrying(
            attempt,
            lambda _: Verdict(retry=True, counted=False),
            max_retries=0,
            backoff=Backoff(0.0),
            patience_s=3.0,
            clock=clock,
            sleep=Sleeps(),
        )

    assert len(calls) == 4


async def test_a_server_hint_is_the_floor_of_the_backoff() -> None:
    _, attempt = _failing(KeyError("503"))
    sleep = Sleeps()

    await retrying(
        attempt,
        lambda _: Verdict(retry=True, hint_s=4.0),
        max_retries=2,
        backoff=Backoff(1.0, jitter=lambda: 0.1),
        sleep=sleep,
    )

    assert sleep.slept == [4.0]
