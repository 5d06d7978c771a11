"""A run's events read the way a client reads them: over `GET /runs/{id}/events` (SSE)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

Event = tuple[int, str, dict[str, Any]]  # (id, type, data) as streamed


def iter_events(url: str, run_id: str, after: int = 0, timeout: float = 60) -> Iterator[Event]:
    """Follow a run's stream from `after`, yielding events as they arrive, to its end."""
    with (
        httpx.Client(base_url=url, timeout=timeout) as client,
        client.stream("GET", f"/runs/{run_id}/events", params={"after": after}) as response,
    ):
        seq, kind = 0, ""
        for line in response.iter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                yield seq, kind, json.loads(line[6:])


def read_events(url: str, run_id: str, after: int = 0, timeout: float = 60) -> list[Event]:
    """A run's events from `after` to the end of its stream."""
    return list(iter_events(url, run_id, after, timeout))
