"""A run's events as the Agent Server's stream parts (`event:` the mode, `data:` its payload):
`parts` formats a follow of the run (app/runs/following.py); the functions before it are pure,
each stored event becoming the frames of the modes asked for.

- `custom`: every event of docs/events.md as it is;
- `updates`: `{<event type>: <event>}` for every event (the search step that made the
  change), `{"__interrupt__": [...]}` when the run stops for its plan's approval;
- `values`: the thread's values when the stream starts, when the run waits and when it ends;
- `messages-tuple` (SSE event `messages`): the answer as one AI message with its metadata.

The frames of one event share the event's id, written on the last of them only, so a client
that re-joins with `Last-Event-ID` gets every frame of the events after it and none twice.
Every stream starts with `metadata` (`run_id`, `attempt`) and ends with `end`, or `error`
(`{"error": code, "message": …}`) when the run failed or the stream could not go on. A run
that waits for its plan's answer ends the stream (at once when the client has seen its
interrupt): the answer (`command.resume`) streams the resumed run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app.access.run_access import Runs
from app.agent_server import shapes
from app.agent_server.bodies import StreamModeName
from app.http.sse import HEARTBEAT
from app.runs.following import Broken, Ended, Heartbeat, Paused, Step
from app.store.base import RunRecord

logger = logging.getLogger(__name__)

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


async def parts(
    runs: Runs,
    record: RunRecord,
    after: int,
    modes: Sequence[StreamModeName],
    opening: bool,
) -> AsyncIterator[bytes]:
    """The run's events after `after` as stream parts, from `metadata` to `end` or `error`;
    `opening` sends the thread's values first."""
    thread_id = record.thread_id or ""
    yield metadata(record.id)
    try:
        if opening and "values" in modes:
            yield part("values", shapes.values(await runs.thread_runs(thread_id)))
        async for item in runs.follow(record, after):
            match item:
                case Heartbeat():
                    yield HEARTBEAT
                case Step(event):
                    for frame in step(modes, event.seq, event.type, json.loads(event.data)):
                        yield frame
                case Paused(None):
                    yield END
                    return
                case Paused(event) | Ended(event) if event is not None:
                    thread_runs = await runs.thread_runs(thread_id)
                    now = next(r for r in thread_runs if r.id == record.id)
                    data = json.loads(event.data)
                    values = shapes.values(thread_runs)
                    if isinstance(item, Paused):
                        interrupt = shapes.interrupt_of(now, data["steps"])
                        frames = [*paused(modes, event.seq, data, values, interrupt), END]
                    else:  # ended with its terminal event
                        answer = shapes.answer_message(now)
                        frames = ended(modes, event.seq, event.type, data, values, answer)
                    for frame in frames:
                        yield frame
                    return
                case Broken(code, message):
                    yield error(code, message)
                    return
    except Exception:
        logger.exception("run=%s agent server stream failed", record.id)
        yield error("stream_failed", "the run's events could not be read")
