"""Server-Sent Events: the service's framing (`id:` / `event:` / `data:` frames and heartbeat
comments) and the one reader of such streams (`frames`, `aframes`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agents.events import RunError
from app.store.base import StoredEvent

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}
HEARTBEAT = b": heartbeat\n\n"
MAX_EVENT_ID = 2**63 - 1  # event ids are 64-bit integers in every store


def frame(event: StoredEvent) -> bytes:
    """One event as an SSE frame. The JSON payload is one line, so one `data:` line."""
    return f"id: {event.seq}\nevent: {event.type}\ndata: {event.data}\n\n".encode()


def stream_error(run_id: str, code: str, message: str) -> bytes:
    """The terminal frame of a stream that cannot go on (its store failed, its run was
    deleted): an `error` event with no `id:` (it is not one of the run's stored events, so a
    client that re-joins does not skip past it)."""
    data = RunError(run_id=run_id, code=code, message=message).model_dump_json()
    return f"event: error\ndata: {data}\n\n".encode()


def parse_last_event_id(value: str | None) -> int | None:
    """The integer in a `Last-Event-ID` header, or None when absent or not an id this service
    could have sent (not a number, negative, or beyond 64 bits)."""
    if value is None:
        return None
    try:
        seq = int(value.strip())
    except ValueError:
        return None
    return seq if 0 <= seq <= MAX_EVENT_ID else None


@dataclass(frozen=True, slots=True)
class Frame:
    """One event as a client reads it: its `id:` (None when it had none), `event:`, `data:`."""

    id: int | None
    event: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


class FrameReader:
    """The one SSE reader in Python: the CLI, the benchmarks and the tests read the service's
    streams with it (`frames`, `aframes`; a test that also counts heartbeats feeds it line by
    line), but for the tests that read a compatible API through that API's own SDK; the
    page's counterpart is in app/static/js/api.js. Fed the stream's lines one by one, it
    hands back each event when the blank line that ends it arrives. Comments (`: heartbeat`)
    are skipped; several `data:` lines are joined by a newline, as the SSE specification
    says."""

    def __init__(self) -> None:
        self._id: int | None = None
        self._event = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> Frame | None:
        if not line:
            if not self._data:
                self._event = "message"
                return None
            frame = Frame(self._id, self._event, "\n".join(self._data))
            self._id, self._event, self._data = None, "message", []
            return frame
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            self._id = int(value) if value.isdigit() else None
        elif field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None


def frames(lines: Iterable[str]) -> Iterator[Frame]:
    """The events of a stream read line by line (httpx's `iter_lines`)."""
    reader = FrameReader()
    for line in lines:
        frame = reader.feed(line)
        if frame is not None:
            yield frame


async def aframes(lines: AsyncIterable[str]) -> AsyncIterator[Frame]:
    """`frames` for an async stream (httpx's `aiter_lines`)."""
    reader = FrameReader()
    async for line in lines:
        frame = reader.feed(line)
        if frame is not None:
            yield frame
