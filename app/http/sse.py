"""Server-Sent Events framing: `id:` / `event:` / `data:` frames and heartbeat comments."""

from __future__ import annotations

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
