"""A run's events as the Agent Server's stream parts (`event:` the mode, `data:` its payload).
Pure: each stored event becomes the frames of the modes asked for.

- `custom`: every event of docs/events.md as it is;
- `updates`: `{<event type>: <event>}` for every event (the search step that made the
  change), `{"__interrupt__": [...]}` when the run stops for its plan's approval;
- `values`: the thread's values when the stream starts, when the run waits and when it ends;
- `messages-tuple` (SSE event `messages`): the answer as one AI message with its metadata.

The frames of one event share the event's id, written on the last of them only, so a client
that re-joins with `Last-Event-ID` gets every frame of the events after it and none twice.
Every stream starts with `metadata` (`run_id`, `attempt`) and ends with `end`, or `error`
(`{"error": code, "message": …}`) when the run failed or the stream could not go on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.integrations.agent_server import StreamModeName

INTERRUPT_KEY = "__interrupt__"
END = b"event: end\ndata: null\n\n"


def part(event: str, data: Any, seq: int | None = None) -> bytes:
    """One stream part as an SSE frame (one `data:` line: the JSON is written on one)."""
    body = json.dumps(data, separators=(",", ":"), default=str)
    id_line = f"id: {seq}\n" if seq is not None else ""
    return f"event: {event}\ndata: {body}\n{id_line}\n".encode()


def metadata(run_id: str) -> bytes:
    return part("metadata", {"run_id": run_id, "attempt": 1})


def error(code: str, message: str) -> bytes:
    return part("error", {"error": code, "message": message})


def _with_last_id(frames: list[bytes], seq: int) -> list[bytes]:
    """The frames, the last one carrying the event's id (an event no mode shows still
    moves the client's resume point)."""
    if not frames:
        return [f"id: {seq}\n\n".encode()]
    *head, last = frames
    return [*head, last[:-1] + f"id: {seq}\n\n".encode()]


def step(
    modes: Sequence[StreamModeName], seq: int, event_type: str, data: dict[str, Any]
) -> list[bytes]:
    """The frames of an event that neither pauses nor ends the run."""
    frames = []
    if "updates" in modes:
        frames.append(part("updates", {event_type: data}))
    if "custom" in modes:
        frames.append(part("custom", data))
    return _with_last_id(frames, seq)


def paused(
    modes: Sequence[StreamModeName],
    seq: int,
    data: dict[str, Any],
    values: dict[str, Any],
    interrupt: dict[str, Any],
) -> list[bytes]:
    """The frames of the run's `interrupt` event: the plan waits for its answer."""
    frames = []
    if "updates" in modes:
        frames.append(part("updates", {INTERRUPT_KEY: [interrupt]}))
    if "custom" in modes:
        frames.append(part("custom", data))
    if "values" in modes:
        frames.append(part("values", {**values, INTERRUPT_KEY: [interrupt]}))
    return _with_last_id(frames, seq)


def ended(
    modes: Sequence[StreamModeName],
    seq: int,
    event_type: str,
    data: dict[str, Any],
    values: dict[str, Any],
    answer: dict[str, Any] | None,
) -> list[bytes]:
    """The frames of the run's terminal event, then `end` (or `error` for a failed run)."""
    frames = []
    if "messages-tuple" in modes and answer is not None:
        meta = {"run_id": data.get("run_id"), "langgraph_node": "respond"}
        frames.append(part("messages", [answer, meta]))
    if "updates" in modes:
        frames.append(part("updates", {event_type: data}))
    if "custom" in modes:
        frames.append(part("custom", data))
    if "values" in modes:
        frames.append(part("values", values))
    frames = _with_last_id(frames, seq)
    if event_type == "error":
        return [*frames, error(str(data.get("code", "error")), str(data.get("message", "")))]
    return [*frames, END]
