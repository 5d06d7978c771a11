"""A run's event log on SQLite: each write checks the lease and takes the next id in the same
statement, inside the writer's transaction; the end of a run is its terminal event and its
status in one write."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agents.result import RunResult
from app.store.base import LeaseLost
from app.store.reads import EventReads
from app.store.sqlite.db import OPEN, SqliteDb, now, row

# The next event of a run, if `owner` holds it: its seq, or no row.
_APPEND = f"""
INSERT INTO events (run_id, seq, type, data)
SELECT ?, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = ?), 0) + 1, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ? AND {OPEN})
RETURNING seq
"""


def append_fenced(conn: sqlite3.Connection, run_id: str, owner: str, type_: str, data: str) -> int:
    """Inside a write: the run's next event, if `owner` holds the run (else `LeaseLost`); its
    id."""
    # One statement: the fence, the next seq and the insert.
    found = row(conn, _APPEND, (run_id, run_id, type_, data, run_id, owner))
    if found is None:
        raise LeaseLost(f"run {run_id} is not held by {owner}")
    return int(found[0])


def end_run(conn: sqlite3.Connection, run_id: str, result: RunResult) -> None:
    """Inside a write: the run ended with `result` (its status), its lease freed."""
    conn.execute(
        "UPDATE runs SET status = ?, updated_at = ?, result = ?, owner = NULL,"
        " lease_until = 0, awaiting = NULL WHERE id = ?",
        (result.status, now(), result.model_dump_json(), run_id),
    )


class SqliteEvents(EventReads[SqliteDb]):
    """`EventLog` on SQLite."""

    async def append(self, run_id: str, owner: str, type_: str, data: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            return append_fenced(conn, run_id, owner, type_, data)

        return await self._db.write(write, "grow")

    async def append_many(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        def write(conn: sqlite3.Connection) -> list[int]:
            return [append_fenced(conn, run_id, owner, type_, data) for type_, data in events]

        return await self._db.write(write, "grow")

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        def write(conn: sqlite3.Connection) -> int:
            seq = append_fenced(conn, run_id, owner, type_, data)
            end_run(conn, run_id, result)
            return seq

        return await self._db.write(write, "end")
