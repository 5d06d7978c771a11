"""Threads on Postgres: a thread is deleted with its runs in one statement, only when every one
of them has ended."""

from __future__ import annotations

from app.store.base import ThreadRecord
from app.store.postgres.db import OPEN, PostgresDb
from app.store.reads import ThreadReads

# A thread with its runs and their events, unless one of its runs is open: whether it was.
_DELETE_THREAD = (
    "WITH busy AS (SELECT 1 FROM lats_runs WHERE thread_id = %(thread)s"
    " AND status = ANY(%(open)s) FOR UPDATE),"
    " gone AS (DELETE FROM lats_runs WHERE thread_id = %(thread)s"
    " AND NOT EXISTS (SELECT 1 FROM busy) RETURNING id),"
    " events AS (DELETE FROM lats_events WHERE run_id IN (SELECT id FROM gone)),"
    " commands AS (DELETE FROM lats_commands WHERE run_id IN (SELECT id FROM gone)),"
    " thread AS (DELETE FROM lats_threads WHERE id = %(thread)s"
    " AND NOT EXISTS (SELECT 1 FROM busy))"
    " SELECT NOT EXISTS (SELECT 1 FROM busy)"
)


class PostgresThreads(ThreadReads[PostgresDb]):
    """`Threads` on Postgres."""

    async def create(self, thread: ThreadRecord) -> None:
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO lats_threads (id, tenant, created_at) VALUES (%s, %s, %s)",
                (thread.id, thread.tenant, thread.created_at),
            )

    async def delete(self, thread_id: str) -> bool:
        # One statement: nothing is deleted while a run of the thread is open.
        async with self._db.connection() as conn:
            cur = await conn.execute(_DELETE_THREAD, {"thread": thread_id, "open": OPEN})
            row = await cur.fetchone()
        return bool(row and row[0])
