"""Runs: start (streaming or background), follow, look up, list, trace, cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse

from app.auth import Authorized
from app.deps import AppSettings, Manager
from app.manager import RunManager
from app.schemas import ErrorBody, RunAccepted, RunList, RunView, SolveRequest
from app.sse import HEARTBEAT, MAX_EVENT_ID, SSE_HEADERS, frame, parse_last_event_id
from app.store.base import RunRecord, RunStatus

router = APIRouter(tags=["runs"])

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "An API key is required."},
    404: {"model": ErrorBody, "description": "No such run."},
    413: {"model": ErrorBody, "description": "The body is too large."},
    422: {"model": ErrorBody, "description": "The body or a parameter is invalid."},
    429: {"model": ErrorBody, "description": "The run queue is full; see Retry-After."},
}
SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events; each `data:` is one event of docs/events.md.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


def view(record: RunRecord, nodes: list[dict[str, Any]] | None = None) -> RunView:
    result = record.result or {}
    return RunView(
        run_id=record.id,
        status=record.status,
        task=record.task,
        params=record.params,
        created_at=record.created_at,
        updated_at=record.updated_at,
        answer=result.get("answer"),
        partial=bool(result.get("partial", False)),
        chosen_id=result.get("chosen_id"),
        path=result.get("path", []),
        sources=result.get("sources", []),
        stop_reason=result.get("stop_reason"),
        metrics=result.get("metrics", {}),
        error=result.get("error"),
        nodes=nodes,
    )


def _stream(manager: RunManager, run_id: str, after: int, heartbeat_s: float) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        async for event in manager.follow(run_id, after, heartbeat_s):
            yield HEARTBEAT if event is None else frame(event)

    headers = {**SSE_HEADERS, "Content-Location": f"/runs/{run_id}"}
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)


@router.post(
    "/solve",
    summary="Run a task and stream its progress",
    responses={**ERRORS, **SSE_DOC},
    response_model=None,
)
async def solve(
    body: SolveRequest,
    _: Authorized,
    manager: Manager,
    settings: AppSettings,
    accept: Annotated[str | None, Header()] = None,
) -> Response:
    """Starts a run and streams its events as SSE (the run goes on if the client leaves).
    With `Accept: application/json`, waits and returns the finished run instead."""
    record = await manager.submit(body.task, body.params())
    if accept and "application/json" in accept and "text/event-stream" not in accept:
        done = await manager.wait(record.id)
        return JSONResponse(
            view(done, await manager.tree(done)).model_dump(mode="json"),
            headers={"Content-Location": f"/runs/{record.id}"},
        )
    return _stream(manager, record.id, 0, settings.sse_heartbeat_s)


@router.post(
    "/runs",
    status_code=202,
    response_model=RunAccepted,
    summary="Start a run in the background",
    responses=ERRORS,
)
async def start_run(
    body: SolveRequest, _: Authorized, manager: Manager, response: Response
) -> RunAccepted:
    record = await manager.submit(body.task, body.params())
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
    _: Authorized,
    manager: Manager,
    settings: AppSettings,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_EVENT_ID, description="Replay events after this id.")
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Replays the events after `Last-Event-ID` (or `?after=`), then tails the run live until
    its terminal event. A finished run replays and closes."""
    await manager.get(run_id)
    start = parse_last_event_id(last_event_id)
    if start is None:
        start = after or 0
    return _stream(manager, run_id, start, settings.sse_heartbeat_s)


@router.get(
    "/runs/{run_id}", response_model=RunView, summary="A run with its tree", responses=ERRORS
)
async def get_run(run_id: str, _: Authorized, manager: Manager) -> RunView:
    record = await manager.get(run_id)
    return view(record, await manager.tree(record))


@router.get("/runs", response_model=RunList, summary="Runs, newest first", responses=ERRORS)
async def list_runs(
    _: Authorized,
    manager: Manager,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> RunList:
    records = await manager.store.list_runs(status=status, limit=limit + 1, offset=offset)
    page = records[:limit]
    return RunList(
        runs=[view(r) for r in page],
        next_offset=offset + limit if len(records) > limit else None,
    )


@router.get(
    "/runs/{run_id}/trace",
    summary="The run's events as JSON Lines",
    responses={**ERRORS, 200: {"content": {"application/x-ndjson": {}}}},
    response_model=None,
)
async def trace(run_id: str, _: Authorized, manager: Manager) -> Response:
    await manager.get(run_id)
    events = await manager.store.events_after(run_id, 0)
    body = "".join(f'{{"id": {e.seq}, "event": {e.data}}}\n' for e in events)
    return Response(body, media_type="application/x-ndjson")


@router.post(
    "/runs/{run_id}/cancel", response_model=RunView, summary="Cancel a run", responses=ERRORS
)
async def cancel_run(run_id: str, _: Authorized, manager: Manager) -> RunView:
    """Idempotent: stops in-flight calls and ends the stream with `cancelled`; a finished run
    is returned as it is."""
    record = await manager.cancel(run_id)
    return view(record)
