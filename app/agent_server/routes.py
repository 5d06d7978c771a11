"""The LangGraph Agent Server's API under `/lg` (info, threads; its assistants are in
assistants.py, its runs in run_routes.py), so its SDKs drive plantree: point
`get_client(url="http://host:8000/lg")` (Python) or `new Client({apiUrl: ".../lg"})` (JS) at it.

The same runs, threads, keys, tenancy and limits as plantree's own API (through
`app/access/run_access.py`): a thread made here is a plantree thread, a run a plantree run.
Its request bodies are read in bodies.py, its replies shaped in shapes.py and stream.py;
docs/integrations.md lists what exists.
Paths in `Location` and `Content-Location` are relative to the API's root, as the SDKs read
them (they resolve them against the URL they were given).
"""

from __future__ import annotations

import builtins
import json
from importlib.metadata import version
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Response

from agents.errors import RunNotFound
from agents.events import PAUSE_TYPES
from app.access.run_access import Runs, ThreadNotFound
from app.agent_server import shapes
from app.agent_server.bodies import (
    GRAPH_ID,
    HistoryRequest,
    ThreadCreate,
    ThreadSearch,
)
from app.http.auth import Authorized
from app.http.deps import CallerRuns
from app.http.responses import ERRORS
from app.http.schemas import ID_PATTERN
from app.store.base import RunRecord, ThreadRecord

router = APIRouter(prefix="/lg", tags=["langgraph-agent-server"])
Id = Annotated[str, Path(min_length=1, max_length=64, pattern=ID_PATTERN)]


async def _waiting(runs: Runs, record: RunRecord) -> dict[str, Any] | None:
    """The interrupt of a run waiting for its plan's answer (its last `interrupt` event)."""
    if record.awaiting is None:
        return None
    steps: list[str] = []
    async for event in runs.stored_events(record):
        if event.type in PAUSE_TYPES:
            steps = json.loads(event.data)["steps"]
    return shapes.interrupt_of(record, steps)


async def thread_of(
    runs: Runs, thread_id: str
) -> tuple[ThreadRecord, builtins.list[RunRecord], dict[str, Any] | None]:
    record = await runs.thread(thread_id)
    thread_runs = await runs.thread_runs(thread_id)
    waiting = await _waiting(runs, thread_runs[-1]) if thread_runs else None
    return record, thread_runs, waiting


async def run_of(thread_id: Id, run_id: Id, runs: CallerRuns) -> RunRecord:
    """The run `run_id` of the caller's thread `thread_id` (not found: either is not)."""
    await runs.thread(thread_id)
    record = await runs.get(run_id)
    if record.thread_id != thread_id:
        raise RunNotFound(f"no run {run_id} on thread {thread_id}")
    return record


ThreadRun = Annotated[RunRecord, Depends(run_of)]


# -- info ------------------------------------------------------------------------------------
@router.get("/info", summary="What this server is")
async def info(_: Authorized) -> dict[str, Any]:
    return {
        "version": version("plantree"),
        "langgraph_py_version": version("langgraph"),
        "flags": {"assistants": True, "crons": False, "langsmith": False},
        "metadata": {"graphs": [GRAPH_ID]},
    }


# -- threads ---------------------------------------------------------------------------------
@router.post("/threads", summary="Create a thread", responses=ERRORS)
async def createthread_of(runs: CallerRuns, body: ThreadCreate | None = None) -> dict[str, Any]:
    """A new, empty thread of the caller (plantree names it; a `thread_id` is refused)."""
    return shapes.thread(await runs.create_thread(), [])


@router.post("/threads/search", summary="The caller's threads, newest first", responses=ERRORS)
async def search_threads(body: ThreadSearch, runs: CallerRuns) -> list[dict[str, Any]]:
    if body.ids is not None:
        found = []
        for thread_id in body.ids[body.offset : body.offset + body.limit]:
            try:
                found.append(shapes.thread(*await thread_of(runs, thread_id)))
            except ThreadNotFound:
                continue  # another key's, or gone: not among the caller's threads
        return [t for t in found if body.status in (None, t["status"])]
    found, offset, skip = [], 0, body.offset
    while len(found) < body.limit:
        page = await runs.threads(limit=100, offset=offset)
        for record in page:
            shown = shapes.thread(*await thread_of(runs, record.id))
            if body.status not in (None, shown["status"]):
                continue
            if skip:
                skip -= 1
                continue
            found.append(shown)
            if len(found) == body.limit:
                break
        if len(page) < 100:
            break
        offset += 100
    return found


@router.get("/threads/{thread_id}", summary="A thread", responses=ERRORS)
async def getthread_of(thread_id: Id, runs: CallerRuns) -> dict[str, Any]:
    return shapes.thread(*await thread_of(runs, thread_id))


@router.delete("/threads/{thread_id}", status_code=204, summary="Delete a thread", responses=ERRORS)
async def delete_thread(thread_id: Id, runs: CallerRuns) -> Response:
    """The thread with its runs, once every one has ended (409 while one has not)."""
    await runs.delete_thread(thread_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/state", summary="A thread's state", responses=ERRORS)
async def get_state(thread_id: Id, runs: CallerRuns) -> dict[str, Any]:
    _, thread_runs, waiting = await thread_of(runs, thread_id)
    return shapes.state(thread_id, thread_runs, waiting)


@router.post("/threads/{thread_id}/history", summary="A thread's states", responses=ERRORS)
async def get_history(
    thread_id: Id, body: HistoryRequest, runs: CallerRuns
) -> list[dict[str, Any]]:
    _, thread_runs, waiting = await thread_of(runs, thread_id)
    return shapes.history(thread_id, thread_runs, waiting, body.limit, body.before_id())
