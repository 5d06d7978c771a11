"""A run followed as OpenAI `chat.completion.chunk`s (app/runs/following.py): the search's
progress as `reasoning_content` deltas, then the answer and its sources as `content`, the
`plantree` object on the last chunk, and `[DONE]`."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from app.access.run_access import NewStream, Runs
from app.http.sse import HEARTBEAT
from app.observability.progress import Progress
from app.openai_api.shapes import chunk, outcome, usage
from app.runs.following import Broken, Ended, Heartbeat, Step

logger = logging.getLogger(__name__)
DONE = b"data: [DONE]\n\n"


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


async def completion_chunks(
    runs: Runs, new: NewStream, model: str, include_usage: bool
) -> AsyncIterator[bytes]:
    """Progress lines as reasoning, then the answer, then `[DONE]`. The run belongs to the
    manager: a client that leaves stops only this generator."""
    run_id = new.record.id
    yield _data(chunk(run_id, model, {"role": "assistant", "content": ""}))
    message = "The stream failed on an internal error; the run goes on: GET /runs/" + run_id
    failed = _data(chunk(run_id, model, {"content": message}, "stop"))
    progress = Progress()
    started = time.monotonic()
    try:
        async for item in runs.follow_new(new):
            match item:
                case Heartbeat():
                    yield HEARTBEAT
                case Step(event):
                    line = progress.update(event.type, json.loads(event.data))
                    if line is not None:
                        reasoning = f"[{time.monotonic() - started:5.1f}s] {line}\n"
                        yield _data(chunk(run_id, model, {"reasoning_content": reasoning}))
                case Ended():
                    text, info = outcome(await runs.wait(run_id))
                    yield _data(chunk(run_id, model, {"content": text}))
                    yield _data(chunk(run_id, model, {}, "stop", plantree=info))
                    if include_usage:
                        final = chunk(run_id, model, {}, usage=usage(info["metrics"]))
                        final["choices"] = []
                        yield _data(final)
                case Broken():
                    yield failed
    except Exception:
        logger.exception("run=%s chat stream failed", run_id)
        yield failed
    yield DONE
