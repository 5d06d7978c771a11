"""OpenAI-compatible routes: `POST /v1/chat/completions` (streaming or not) and `/v1/models`.

A chat front-end can use plantree as a model. Streaming sends the search's progress as
`reasoning_content` deltas (shown as "thinking" by front-ends that know the field, ignored by
the rest), then the answer and its sources as `content`. Every chunk's `id` is the run id; the
response also names it in `X-Plantree-Run-Id` and, on the last chunk or the whole body, in a
`plantree` object (status, stop reason, sources, metrics).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from app.http.auth import Authorized
from app.http.deps import CallerRuns
from app.http.errors import invalid_input, invalid_model
from app.http.event_stream import sse_response
from app.http.responses import ERRORS
from app.openai_api.shapes import (
    ChatRequest,
    UnknownModel,
    completion,
    model_card,
    models_list,
)
from app.openai_api.stream import completion_chunks

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
        raise invalid_model(e, "body") from e
    except ValueError as e:
        raise invalid_input("body", "messages", message=str(e)) from e
    if params.approve_plan:
        # A completion answers in one exchange; a plan waiting for approval would hold it open.
        message = "approve_plan needs the run API (POST /runs, then POST /runs/{id}/resume)"
        raise invalid_input("body", "approve_plan", message=message)
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
        frames = completion_chunks(runs, new, body.model, include_usage)
        return sse_response(new.slot.hold(frames), headers)
    done = await runs.wait(record.id)
    return JSONResponse(completion(done, body.model), headers=headers)
