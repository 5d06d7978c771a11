"""Runs: start (streaming or background), follow, look up, list, trace, cancel. Each route
reaches only the caller's runs (app/access/run_access.py)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse

from app.http.deps import CallerRuns
from app.http.errors import invalid_input
from app.http.event_stream import sse_response
from app.http.responses import ERRORS, conflict, view
from app.http.schemas import ResumeRequest, RunAccepted, RunList, RunView, SolveRequest
from app.http.sse import (
    HEARTBEAT,
    MAX_EVENT_ID,
    frame,
    parse_last_event_id,
    stream_error,
)
from app.runs.following import Broken, Ended, Heartbeat, Paused, RunItem, Step
from app.runs.manager import RunPlace
from app.store.base import RunStatus

logger = logging.getLogger(__name__)
router = APIRouter(tags=["runs"])

SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events; each `data:` is one event of docs/events.md.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


async def _framed(run_id: str, items: AsyncIterator[RunItem]) -> AsyncIterator[bytes]:
    """The run's items as SSE frames, a stored event each (a pause is its `interrupt` event;
    the stream goes on), ending with exactly one terminal frame: the run's own terminal event,
    or an `error` frame with no `id:` when the stream cannot follow the run to its end
    (`stream_failed`, `run_deleted`)."""
    async for item in items:
        match item:
            case Heartbeat():
                yield HEARTBEAT
            case Step(event) | Paused(event) if event is not None:
                yield frame(event)
            case Ended(event):
                yield frame(event)
                return
            case Broken(code, message):
                yield stream_error(run_id, code, message)
                return


def _place(body: SolveRequest) -> RunPlace:
    return RunPlace(thread_id=body.thread_id, webhook=body.webhook)


def _stream(frames: AsyncIterator[bytes], run_id: str) -> StreamingResponse:
    return sse_response(frames, {"Content-Location": f"/runs/{run_id}"})


@router.post(
    "/solve",
    summary="Run a task and stream its progress",
    responses={**ERRORS, **SSE_DOC},
    response_model=None,
)
async def solve(
    body: SolveRequest, runs: CallerRuns, accept: Annotated[str | None, Header()] = None
) -> Response:
    """Starts a run and streams its events as SSE (the run goes on if the client leaves).
    With `Accept: application/json`, waits and returns the finished run instead."""
    if accept and "application/json" in accept and "text/event-stream" not in accept:
        record = await runs.submit(body.task, body.params(), **_place(body))
        done = await runs.wait(record.id)
        return JSONResponse(
            view(done, await runs.tree(done)).model_dump(mode="json"),
            headers={"Content-Location": f"/runs/{record.id}"},
        )
    new = await runs.submit_streamed(body.task, body.params(), **_place(body))
    events = runs.follow_new(new)
    return _stream(new.slot.hold(_framed(new.record.id, events)), new.record.id)


@router.post(
    "/runs",
    status_code=202,
    response_model=RunAccepted,
    summary="Start a run in the background",
    responses=ERRORS,
)
async def start_run(body: SolveRequest, runs: CallerRuns, response: Response) -> RunAccepted:
    record = await runs.submit(body.task, body.params(), **_place(body))
    response.headers["Location"] = f"/runs/{record.id}"
    return RunAccepted(run_id=record.id, status=record.status, events=f"/runs/{record.id}/events")


@router.get(
    "/runs/{run_id}/events",
    summary="Follow a run's events (replay, then live)",
    responses={**ERRORS, **SSE_DOC},
    response_model=None,
)
async def run_events(
    run_id: str,
    runs: CallerRuns,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_EVENT_ID, description="Replay events after this id.")
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Replays the events after `Last-Event-ID` (or `?after=`), then tails the run live until
    its terminal event. A finished run replays and closes. A resume point beyond the run's
    last event is refused (422) before the stream starts."""
    record = await runs.get(run_id)
    start = parse_last_event_id(last_event_id)
    where, name = ("header", "last-event-id") if start is not None else ("query", "after")
    if start is None:
        start = after or 0
    if not await runs.resumes_within(record, start):
        raise invalid_input(where, name, message="beyond the run's last event id")
    frames = _framed(run_id, runs.follow(record, start))
    return _stream((await runs.stream_slot()).hold(frames), run_id)


@router.get(
    "/runs/{run_id}", response_model=RunView, summary="A run with its tree", responses=ERRORS
)
async def get_run(run_id: str, runs: CallerRuns) -> RunView:
    record = await runs.get(run_id)
    return view(record, await runs.tree(record))


@router.get(
    "/runs", response_model=RunList, summary="The caller's runs, newest first", responses=ERRORS
)
async def list_runs(
    runs: CallerRuns,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> RunList:
    """The caller's runs (every run for the admin key, or without keys)."""
    page, next_offset = await runs.list(status=status, limit=limit, offset=offset)
    return RunList(runs=[view(r) for r in page], next_offset=next_offset)


@router.get(
    "/runs/{run_id}/trace",
    summary="The run's events as JSON Lines",
    responses={**ERRORS, 200: {"content": {"application/x-ndjson": {}}}},
    response_model=None,
)
async def trace(run_id: str, runs: CallerRuns) -> StreamingResponse:
    """Every stored event, one JSON object a line, streamed from the store a page at a time."""
    record = await runs.get(run_id)

    async def lines() -> AsyncIterator[bytes]:
        async for e in runs.stored_events(record):
            yield f'{{"id": {e.seq}, "event": {e.data}}}\n'.encode()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


@router.post(
    "/runs/{run_id}/cancel", response_model=RunView, summary="Cancel a run", responses=ERRORS
)
async def cancel_run(run_id: str, runs: CallerRuns) -> RunView:
    """Idempotent: stops in-flight calls and ends the stream with `cancelled`; a finished run
    is returned as it is."""
    record = await runs.cancel(run_id)
    logger.info("run=%s cancel asked by caller=%s", run_id, runs.caller.label)
    return view(record)


@router.post(
    "/runs/{run_id}/resume",
    response_model=RunView,
    summary="Answer a run waiting for its plan's approval",
    responses=conflict("The run is not waiting for an answer."),
)
async def resume_run(run_id: str, body: ResumeRequest, runs: CallerRuns) -> RunView:
    """For a run started with `approve_plan` and stopped at its `interrupt` event: `approve`
    runs the plan as is, `edit` runs `steps` instead (cut to the run's `max_plan_steps`),
    `reject` ends the run `cancelled` without a search call. The run is queued and resumes
    from its checkpoint on any worker; follow it at /runs/{id}/events."""
    return view(await runs.answer_plan(run_id, body))


@router.delete(
    "/runs/{run_id}",
    status_code=204,
    summary="Delete a finished run and its events",
    responses=conflict("The run has not ended; cancel it first."),
)
async def delete_run(run_id: str, runs: CallerRuns) -> Response:
    """A finished run (done, failed or cancelled) is removed with its whole event log; an
    unfinished one is refused (409) until it ends."""
    await runs.delete(run_id)
    return Response(status_code=204)
