"""The Agent Server API's runs under `/lg` (routes.py has its threads):
start one on a thread (streamed or in the background), answer its plan with `command.resume`,
look it up, re-join its stream, wait for it, cancel it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from app.access.assistants import CallerAssistants
from app.access.run_access import Runs
from app.agent_server import shapes, stream
from app.agent_server.assistants import Assistants
from app.agent_server.bodies import (
    JOIN_MODES,
    BadInput,
    RunCreate,
    StreamModeName,
    plan_decision,
    question,
    run_params,
)
from app.agent_server.routes import Id, ThreadRun, thread_of
from app.http.deps import CallerRuns
from app.http.errors import invalid_input, invalid_model
from app.http.event_stream import sse_response
from app.http.responses import ERRORS
from app.http.sse import parse_last_event_id
from app.store.base import RunRecord

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/lg", tags=["langgraph-agent-server"])


def _location(thread_id: str, run_id: str) -> str:
    return f"/threads/{thread_id}/runs/{run_id}"


async def _start(
    runs: Runs, assistants: CallerAssistants, thread_id: str, body: RunCreate
) -> tuple[RunRecord, int]:
    """Start a run on the thread with the parameters of the assistant the body names (a preset
    or the caller's own), or answer the plan its last run waits for (`command`); the run and
    the id of its last event before this request."""
    if body.command is not None:
        if body.input is not None:
            raise invalid_input(
                "body",
                "input",
                message="an answer to a plan (`command`) goes on with its run's question",
            )
        try:
            decision = plan_decision(body.command.resume)
        except BadInput as e:
            raise invalid_input("body", "command", message=str(e)) from e
        except ValidationError as e:
            raise invalid_model(e, "body", "command") from e
        return await runs.answer_thread(thread_id, decision)
    preset = await assistants.params(body.assistant_id)
    try:
        params = run_params(body, preset)
        task = question(body.input)
    except BadInput as e:
        raise invalid_input("body", e.field, message=str(e)) from e
    except ValidationError as e:
        raise invalid_model(e, "body", "context") from e
    record = await runs.submit_alone(thread_id, task, params)
    logger.info("run=%s started on thread=%s (agent server API)", record.id, thread_id)
    return record, 0


def _streaming(parts: AsyncIterator[bytes], record: RunRecord) -> StreamingResponse:
    where = _location(record.thread_id or "", record.id)
    return sse_response(parts, {"Content-Location": where, "Location": f"{where}/stream"})


@router.post(
    "/threads/{thread_id}/runs/stream",
    summary="Start a run (or answer its plan) and stream it",
    responses=ERRORS,
    response_model=None,
)
async def stream_run(
    thread_id: Id, body: RunCreate, runs: CallerRuns, assistants: Assistants
) -> StreamingResponse:
    """A new run on the thread, or with `command.resume` the answer to the plan its last run
    waits for; the run's parts in the modes asked for until it ends or waits."""
    await runs.thread(thread_id)
    slot = await runs.stream_slot()
    try:
        record, after = await _start(runs, assistants, thread_id, body)
    except BaseException:
        slot.release()
        raise
    opening = body.command is None  # a resumed run's stream goes on from its interrupt
    parts = stream.parts(runs, record, after, body.modes(), opening)
    return _streaming(slot.hold(parts), record)


@router.post(
    "/threads/{thread_id}/runs",
    summary="Start a run on a thread in the background",
    responses=ERRORS,
)
async def create_run(
    thread_id: Id, body: RunCreate, runs: CallerRuns, assistants: Assistants, response: Response
) -> dict[str, Any]:
    await runs.thread(thread_id)
    record, _ = await _start(runs, assistants, thread_id, body)
    response.headers["Content-Location"] = _location(thread_id, record.id)
    return shapes.run(record)


@router.post(
    "/threads/{thread_id}/runs/wait", summary="Start a run and wait for it", responses=ERRORS
)
async def wait_run(
    thread_id: Id, body: RunCreate, runs: CallerRuns, assistants: Assistants, response: Response
) -> dict[str, Any]:
    """Like POST …/runs, answered once the run ends or waits for its plan's answer: the
    thread's values then."""
    await runs.thread(thread_id)
    record, _ = await _start(runs, assistants, thread_id, body)
    response.headers["Content-Location"] = _location(thread_id, record.id)
    return await _joined(runs, thread_id, record.id)


@router.get("/threads/{thread_id}/runs", summary="A thread's runs, newest first", responses=ERRORS)
async def list_runs(
    thread_id: Id,
    runs: CallerRuns,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    status: Annotated[shapes.AgentRunStatus | None, Query()] = None,
) -> list[dict[str, Any]]:
    shown = [shapes.run(r) for r in reversed(await runs.thread_runs(thread_id))]
    return [r for r in shown if status in (None, r["status"])][offset : offset + limit]


@router.delete(
    "/threads/{thread_id}/runs/{run_id}",
    status_code=204,
    summary="Delete a run that has ended",
    responses=ERRORS,
)
async def delete_run(run: ThreadRun, runs: CallerRuns) -> Response:
    """A run that has ended, with its events; one that has not is refused (409)."""
    await runs.delete(run.id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}", summary="A run", responses=ERRORS)
async def get_run(run: ThreadRun) -> dict[str, Any]:
    return shapes.run(run)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    summary="Re-join a run's stream",
    responses=ERRORS,
    response_model=None,
)
async def join_stream(
    record: ThreadRun,
    runs: CallerRuns,
    stream_mode: Annotated[
        list[StreamModeName | Literal[""]] | None,
        Query(description="Modes to stream; none (or empty, as the SDK sends none): the default."),
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The run's parts after `Last-Event-ID` (from its start without one), then live until it
    ends or waits for its plan's answer."""
    start = parse_last_event_id(last_event_id) or 0
    if not await runs.resumes_within(record, start):
        raise invalid_input("header", "last-event-id", message="beyond the run's last event id")
    named = [mode for mode in stream_mode or [] if mode]
    modes = tuple(dict.fromkeys(named)) if named else JOIN_MODES
    parts = stream.parts(runs, record, start, modes, start == 0)
    return _streaming((await runs.stream_slot()).hold(parts), record)


@router.get("/threads/{thread_id}/runs/{run_id}/join", summary="Wait for a run", responses=ERRORS)
async def join_run(thread_id: Id, run: ThreadRun, runs: CallerRuns) -> dict[str, Any]:
    """Waits until the run ends or waits for its plan's answer; the thread's values then."""
    return await _joined(runs, thread_id, run.id)


async def _joined(runs: Runs, thread_id: str, run_id: str) -> dict[str, Any]:
    """Once the run has ended or waits for its plan's answer: its thread's values."""
    await runs.wait(run_id)
    _, thread_runs, waiting = await thread_of(runs, thread_id)
    return shapes.joined(thread_runs, waiting)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", summary="Cancel a run", responses=ERRORS)
async def cancel_run(
    run: ThreadRun,
    runs: CallerRuns,
    wait: Annotated[bool, Query()] = False,
    action: Annotated[str, Query(pattern="^interrupt$")] = "interrupt",
) -> JSONResponse:
    """`action=interrupt` only (a cancelled run keeps what it found); with `wait`, answers
    once the run has ended."""
    record = await runs.cancel(run.id)
    if wait:
        record = await runs.wait(run.id)
    logger.info("run=%s cancel asked by caller=%s (agent server API)", run.id, runs.caller.label)
    return JSONResponse(shapes.run(record), status_code=200 if wait else 202)
