"""Threads on SQLite: a thread is deleted with its runs in one write, only when every one of
them has ended."""

from __future__ import annotations

import sqlite3

from app.store.base import ThreadRecord
from app.store.reads import ThreadReads
from app.store.sqlite.db import OPEN, SqliteDb, row
from app.store.sqlite.runs import delete_ended


class SqliteThreads(ThreadReads[SqliteDb]):
    """`Threads` on SQLite."""

    async def create(self, thread: ThreadRecord) -> None:
        values = (thread.id, thread.tenant, thread.created_at.isoformat())

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO threads (id, tenant, created_at) VALUES (?, ?, ?)", values)

        await self._db.write(write, "new")

    async def delete(self, thread_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, f"SELECT 1 FROM runs WHERE thread_id = ? AND {OPEN}", (thread_id,)):
                return False
            ids = [
                r["id"]
                for r in conn.execute("SELECT id FROM runs WHERE thread_id = ?", (thread_id,))
            ]
            delete_ended(conn, ids)
            conn.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            return True

        return await self._db.write(write)
