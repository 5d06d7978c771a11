"""A run's events read the way a client reads them: over `GET /runs/{id}/events` (SSE)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from app.http.sse import frames

Event = tuple[int, str, dict[str, Any]]  # (id, type, data) as streamed


def iter_events(url: str, run_id: str, after: int = 0, timeout: float = 60) -> Iterator[Event]:
    """Follow a run's stream from `after`, yielding events as they arrive, to its end."""
    with (
        httpx.Client(base_url=url, timeout=timeout) as client,
        client.stream("GET", f"/runs/{run_id}/events", params={"after": after}) as response,
    ):
        for frame in frames(response.iter_lines()):
            yield frame.id or 0, frame.event, frame.json()


def read_events(url: str, run_id: str, after: int = 0, timeout: float = 60) -> list[Event]:
    """A run's events from `after` to the end of its stream."""
    return list(iter_events(url, run_id, after, timeout))
