"""Run records as the store tests write them directly, a lease that has already ended, a run
whose end was logged without its status, and a store with one of its parts replaced by a
test's double."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from agents.events import Event, RunDone
from agents.result import RunResult
from app.store.base import Lease, RunRecord, RunStatus
from app.store.protocols import RunStore

# A lease that ended a minute ago: no test waits for a real one to run out.
ENDED_LEASE_S = -60.0


def run_record(run_id: str | None = None, status: RunStatus = "queued") -> RunRecord:
    """A run record created now (its id random unless given), task "t", no parameters."""
    now = datetime.now(UTC)
    return RunRecord(
        id=run_id or uuid.uuid4().hex,
        task="t",
        params={},
        status=status,
        created_at=now,
        updated_at=now,
    )


def done_event(run_id: str, answer: str = "42") -> RunDone:
    """A `done` event of one chosen node `n1`."""
    return RunDone(
        run_id=run_id,
        answer=answer,
        partial=False,
        chosen_id="n1",
        path=["n1"],
        sources=[],
        stop_reason="max_paths",
        metrics={},
    )


async def log_end_without_status(store: RunStore, run_id: str, end: Event) -> None:
    """A running run whose worker died after logging its terminal event `end` but not its
    status (what a store written before `finish` was one transaction could hold)."""
    await store.runs.create(
        run_record(run_id, "running"), started="{}", lease=Lease("gone", ENDED_LEASE_S)
    )
    await store.events.append(run_id, "gone", end.type, end.model_dump_json())


async def held_run(store: RunStore, owner: str, *, ended: bool = False) -> str:
    """A run `owner` holds, with two events (`run_started`, `plan`), and ended as done with
    answer "a" when `ended`; its id."""
    record = run_record()
    await store.runs.create(record, started="{}", lease=Lease(owner, 60))
    await store.events.append(record.id, owner, "plan", "{}")
    if ended:
        done = RunResult(run_id=record.id, status="done", answer="a")
        await store.events.finish(record.id, owner, "done", "{}", done)
    return record.id


class _Replaced:
    def __init__(self, store: RunStore, parts: dict[str, Any]) -> None:
        self._store = store
        vars(self).update(parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def replaced(store: RunStore, **parts: Any) -> RunStore:
    """`store` with the parts named (`events=...`) replaced by the doubles given."""
    return _Replaced(store, parts)
