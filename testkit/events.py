"""A run's events read the way a client reads them: over `GET /runs/{id}/events` (SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from app.http.sse import frames

Event = tuple[int, str, dict[str, Any]]  # (id, type, data) as streamed


WITHIN_S = 600.0  # the longest a stream is followed: heartbeats keep a stuck one open forever


def iter_events(
    url: str, run_id: str, after: int = 0, timeout: float = 60, within_s: float = WITHIN_S
) -> Iterator[Event]:
    """Follow a run's stream from `after`, yielding events as they arrive, to its end.
    `timeout` bounds each read; a stream that has not ended `within_s` is a `TimeoutError`."""
    with (
        httpx.Client(base_url=url, timeout=timeout) as client,
        client.stream("GET", f"/runs/{run_id}/events", params={"after": after}) as response,
    ):
        if response.status_code != 200:
            response.read()
            raise AssertionError(
                f"GET /runs/{run_id}/events: {response.status_code} {response.text}"
            )
        lines = _until(time.monotonic() + within_s, response.iter_lines(), run_id)
        for frame in frames(lines):
            yield frame.id or 0, frame.event, frame.json()


def _until(deadline: float, lines: Iterable[str], run_id: str) -> Iterator[str]:
    for line in lines:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the stream of run {run_id} did not end in time")
        yield line


def read_events(
    url: str, run_id: str, after: int = 0, timeout: float = 60, within_s: float = WITHIN_S
) -> list[Event]:
    """A run's events from `after` to the end of its stream."""
    return list(iter_events(url, run_id, after, timeout, within_s))
