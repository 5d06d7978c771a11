"""Run records as the store tests write them directly, and a lease that has already ended."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.store.base import RunRecord, RunStatus

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
