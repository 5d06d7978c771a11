"""Threads: a sequence of runs on one subject; a run asked on a thread (`thread_id` in
POST /solve or POST /runs) starts from what the earlier ones found. Each route reaches only
the caller's threads, as the run routes reach only its runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from app.http.deps import CallerRuns
from app.http.responses import ERRORS, conflict, view
from app.http.schemas import ID_PATTERN, ErrorBody, ThreadView
from app.store.base import RunRecord, ThreadRecord

router = APIRouter(prefix="/threads", tags=["threads"])

THREAD_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    404: {"model": ErrorBody, "description": "No such thread (or another key's)."},
}
ThreadId = Annotated[str, Path(min_length=1, max_length=64, pattern=ID_PATTERN)]


def thread_view(thread: ThreadRecord, runs: list[RunRecord]) -> ThreadView:
    return ThreadView(
        thread_id=thread.id, created_at=thread.created_at, runs=[view(r) for r in runs]
    )


@router.post(
    "",
    status_code=201,
    response_model=ThreadView,
    summary="Start a thread",
    responses=THREAD_ERRORS,
)
async def create_thread(runs: CallerRuns, response: Response) -> ThreadView:
    """A new, empty thread of the caller; ask on it with `thread_id` in POST /solve."""
    thread = await runs.create_thread()
    response.headers["Location"] = f"/threads/{thread.id}"
    return thread_view(thread, [])


@router.get(
    "/{thread_id}",
    response_model=ThreadView,
    summary="A thread with its runs",
    responses=THREAD_ERRORS,
)
async def get_thread(thread_id: ThreadId, runs: CallerRuns) -> ThreadView:
    thread = await runs.thread(thread_id)
    return thread_view(thread, await runs.thread_runs(thread_id))


@router.delete(
    "/{thread_id}",
    status_code=204,
    summary="Delete a thread with its finished runs",
    responses=conflict("A run of the thread has not ended.", THREAD_ERRORS),
)
async def delete_thread(thread_id: ThreadId, runs: CallerRuns) -> Response:
    """The thread and its runs (each with its event log) are removed in one transaction, once
    every run of it has ended; while one has not, nothing is deleted (409)."""
    await runs.delete_thread(thread_id)
    return Response(status_code=204)
