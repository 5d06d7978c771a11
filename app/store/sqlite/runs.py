"""Runs as records on SQLite: a run stored with its first event (and a tenant's limit counted in
the same write), and finished runs deleted with their events and commands."""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime

from app.store.base import Lease, RunRecord, TooManyOpen
from app.store.reads import RunReads
from app.store.sqlite.db import ENDED, OPEN, SqliteDb, marks


class SqliteRuns(RunReads[SqliteDb]):
    """`RunRecords` on SQLite."""

    async def create(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        owner = lease.owner if lease is not None else None
        until = time.time() + lease.ttl_s if lease is not None else 0.0
        run = (
            record.id,
            record.task,
            record.params.model_dump_json(),
            record.status,
            record.created_at.isoformat(),
            record.updated_at.isoformat(),
            owner,
            until,
            record.tenant,
            record.thread_id,
            record.webhook,
        )

        def write(conn: sqlite3.Connection) -> None:
            # One writer, one transaction per batch: the count below and the insert are atomic.
            if max_open is not None:
                (n,) = conn.execute(
                    f"SELECT COUNT(*) FROM runs WHERE tenant IS ? AND {OPEN}", (record.tenant,)
                ).fetchone()
                if n >= max_open:
                    raise TooManyOpen(max_open)
            conn.execute(
                "INSERT INTO runs (id, task, params, status, created_at, updated_at, result,"
                " owner, lease_until, tenant, thread_id, webhook)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)",
                run,
            )
            if started is not None:
                conn.execute(
                    "INSERT INTO events (run_id, seq, type, data) VALUES (?, 1, 'run_started', ?)",
                    (record.id, started),
                )

        await self._db.write(write, "new")

    async def delete(self, run_id: str) -> bool:
        return await self._db.write(lambda conn: delete_ended(conn, [run_id]) == 1)

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        def write(conn: sqlite3.Connection) -> int:
            rows = conn.execute(
                f"SELECT id FROM runs WHERE {ENDED} AND updated_at < ? LIMIT ?",
                (cutoff.isoformat(), limit),
            ).fetchall()
            return delete_ended(conn, [row["id"] for row in rows])

        return await self._db.write(write)


def delete_ended(conn: sqlite3.Connection, run_ids: list[str]) -> int:
    """Inside a write: delete those of `run_ids` that are finished, with their events and
    commands; how many."""
    if not run_ids:
        return 0
    ended = [
        row["id"]
        for row in conn.execute(
            f"SELECT id FROM runs WHERE id IN ({marks(run_ids)}) AND {ENDED}", run_ids
        )
    ]
    if ended:
        conn.execute(f"DELETE FROM events WHERE run_id IN ({marks(ended)})", ended)
        conn.execute(f"DELETE FROM commands WHERE run_id IN ({marks(ended)})", ended)
        conn.execute(f"DELETE FROM runs WHERE id IN ({marks(ended)})", ended)
    return len(ended)
