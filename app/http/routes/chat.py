"""OpenAI-compatible routes: `POST /v1/chat/completions` (streaming or not) and `/v1/models`.

A chat front-end can use plantree as a model. Streaming sends the search's progress as
`reasoning_content` deltas (shown as "thinking" by front-ends that know the field, ignored by
the rest), then the answer and its sources as `content`. Every chunk's `id` is the run id; the
response also names it in `X-Plantree-Run-Id` and, on the last chunk or the whole body, in a
`plantree` object (status, stop reason, sources, metrics).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import APIRouter, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from agents.events import TERMINAL_TYPES
from agents.grounding.verify import Citation
from agents.result import RunAnswer
from app.access.run_access import NewStream, Runs
from app.http.auth import Authorized
from app.http.deps import CallerRuns
from app.http.event_stream import EventStreamResponse
from app.http.routes.runs import ERRORS
from app.http.sse import HEARTBEAT, SSE_HEADERS
from app.integrations.openai_compat import (
    ChatRequest,
    UnknownModel,
    chunk,
    invalid_fields,
    model_card,
    models_list,
    usage,
)
from app.integrations.progress import Progress, with_sources
from app.store.base import RunRecord

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["openai-compatible"])


def _not_found(message: str) -> JSONResponse:
    return JSONResponse({"code": "model_not_found", "message": message}, 404)


@router.get("/models", summary="The models (search presets) this service offers")
async def list_models(_: Authorized) -> dict[str, Any]:
    return models_list()


@router.get("/models/{model}", summary="One model", responses=ERRORS, response_model=None)
async def get_model(model: str, _: Authorized) -> dict[str, Any] | JSONResponse:
    listed = {card["id"] for card in models_list()["data"]}
    return model_card(model) if model in listed else _not_found(f"unknown model {model!r}")


@router.post(
    "/chat/completions",
    summary="Answer the last user message with a search (OpenAI chat-completions shape)",
    responses=ERRORS,
    response_model=None,
)
async def chat_completions(body: ChatRequest, runs: CallerRuns) -> Response:
    try:
        params = body.run_params()
        task = body.task()
    except UnknownModel as e:
        return _not_found(str(e))
    except ValidationError as e:
        raise RequestValidationError(
            [{**f, "loc": ["body", *f["loc"]]} for f in invalid_fields(e)]
        ) from e
    except ValueError as e:
        raise RequestValidationError(
            [{"loc": ["body", "messages"], "msg": str(e), "type": "value_error"}]
        ) from e
    if params.approve_plan:
        # A completion answers in one exchange; a plan waiting for approval would hold it open.
        message = "approve_plan needs the run API (POST /runs, then POST /runs/{id}/resume)"
        raise RequestValidationError(
            [{"loc": ["body", "approve_plan"], "msg": message, "type": "value_error"}]
        )
    new = await runs.submit_streamed(task, params) if body.stream else None
    record = new.record if new is not None else await runs.submit(task, params)
    headers = {"X-Plantree-Run-Id": record.id, "Content-Location": f"/runs/{record.id}"}
    logger.info(
        "run=%s started from a chat completion (model %s, caller=%s)",
        record.id,
        body.model,
        runs.caller.label,
    )
    if new is not None:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        frames = _stream(runs, new, body.model, include_usage)
        return EventStreamResponse(
            new.slot.hold(frames),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, **headers},
        )
    done = await runs.wait(record.id)
    return JSONResponse(_completion(done, body.model), headers=headers)


def url_citations(text: str, citations: Sequence[Citation]) -> list[dict[str, Any]]:
    """OpenAI's `url_citation` annotations: each verified citation whose source has a web URL,
    on the first occurrence of its marker `[n]` in `text` (`end_index` exclusive)."""
    annotations: list[dict[str, Any]] = []
    for citation in citations:
        url = citation["source"]["url"]
        start = text.find(f"[{citation['marker']}]")
        if not url.startswith(("http://", "https://")) or start < 0:
            continue
        annotations.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "url": url,
                    "title": citation["source"]["title"],
                    "start_index": start,
                    "end_index": start + len(f"[{citation['marker']}]"),
                },
            }
        )
    return annotations


def _outcome(record: RunRecord) -> tuple[str, dict[str, Any]]:
    """The assistant's text for a finished run, and the `plantree` object."""
    result = record.result or RunAnswer()
    if record.status == "done" and result.answer is not None:
        text = with_sources(result.answer, result.sources)
    elif record.status == "cancelled":
        text = "The search was cancelled."
    else:
        text = f"The search failed: {result.error['message'] if result.error else 'no answer'}"
    info = {
        "run_id": record.id,
        "status": record.status,
        "stop_reason": result.stop_reason,
        "partial": result.partial,
        "sources": result.sources,
        "citations": result.citations,
        "groundedness": result.groundedness,
        "unsupported": result.unsupported,
        "rejected": result.rejected,
        "metrics": result.metrics,
        "run": f"/runs/{record.id}",
    }
    return text, info


def _completion(record: RunRecord, model: str) -> dict[str, Any]:
    text, info = _outcome(record)
    return {
        "id": record.id,
        "object": "chat.completion",
        "created": int(record.created_at.timestamp()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text,
                    "annotations": url_citations(text, info["citations"]),
                },
                "finish_reason": "stop",
            }
        ],
        "usage": usage(info["metrics"]),
        "plantree": info,
    }


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


async def _stream(
    runs: Runs, new: NewStream, model: str, include_usage: bool
) -> AsyncIterator[bytes]:
    """Progress lines as reasoning, then the answer, then `[DONE]`. The run belongs to the
    manager: a client that leaves stops only this generator."""
    run_id = new.record.id
    yield _data(chunk(run_id, model, {"role": "assistant", "content": ""}))
    progress = Progress()
    started = time.monotonic()
    try:
        async for event in runs.events_new(new):
            if event is None:
                yield HEARTBEAT
                continue
            line = progress.update(event.type, event.data)
            if event.type in TERMINAL_TYPES:
                break
            if line is not None:
                elapsed = time.monotonic() - started
                yield _data(
                    chunk(run_id, model, {"reasoning_content": f"[{elapsed:5.1f}s] {line}\n"})
                )
        record = await runs.wait(run_id)
        text, info = _outcome(record)
        yield _data(chunk(run_id, model, {"content": text}))
        yield _data(chunk(run_id, model, {}, "stop", plantree=info))
        if include_usage:
            final = chunk(run_id, model, {}, usage=usage(info["metrics"]))
            final["choices"] = []
            yield _data(final)
    except Exception:
        logger.exception("run=%s chat stream failed", run_id)
        message = "The stream failed on an internal error; the run goes on: GET /runs/" + run_id
        yield _data(chunk(run_id, model, {"content": message}, "stop"))
    yield b"data: [DONE]\n\n"
