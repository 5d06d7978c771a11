"""What the service persists about runs and their events, behind one small interface.

Implementations: SQLite (embedded default) and Postgres. A multi-replica deployment swaps the
implementation, not the callers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

RunStatus = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]
RUN_STATUSES: tuple[RunStatus, ...] = (
    "queued",
    "running",
    "done",
    "failed",
    "cancelled",
    "interrupted",
)
FINISHED: frozenset[RunStatus] = frozenset({"done", "failed", "cancelled"})


class RunRecord(BaseModel):
    """One run as stored."""

    id: str
    task: str
    params: dict[str, Any]
    status: RunStatus
    created_at: datetime
    updated_at: datetime
    result: dict[str, Any] | None = Field(
        default=None, description="The engine's RunResult as JSON once the run has ended."
    )


class StoredEvent(BaseModel):
    """One persisted event: its per-run sequence number and JSON payload."""

    seq: int
    type: str
    data: str


class RunStore(Protocol):
    """Runs and their event log."""

    async def create_run(self, record: RunRecord) -> None: ...

    async def set_status(
        self, run_id: str, status: RunStatus, result: dict[str, Any] | None = None
    ) -> None: ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int
    ) -> list[RunRecord]: ...

    async def runs_with_status(self, statuses: tuple[RunStatus, ...]) -> list[RunRecord]: ...

    async def append_event(self, run_id: str, seq: int, type_: str, data: str) -> None: ...

    async def events_after(self, run_id: str, after: int) -> list[StoredEvent]: ...

    async def last_seq(self, run_id: str) -> int: ...

    async def ping(self) -> None: ...
