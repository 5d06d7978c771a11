"""Steering commands on SQLite, numbered per run inside the writer's transaction."""

from __future__ import annotations

import sqlite3

from app.store.reads import CommandReads
from app.store.sqlite.db import OPEN, SqliteDb, now, row

# A steering command of an open run, numbered after its others: its id, or no row.
_ADD_COMMAND = f"""
INSERT INTO commands (run_id, id, command, node_id, step, sent_by, created_at)
SELECT ?, COALESCE((SELECT MAX(id) FROM commands WHERE run_id = ?), 0) + 1, ?, ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND {OPEN})
RETURNING id
"""


class SqliteCommands(CommandReads[SqliteDb]):
    """`Commands` on SQLite."""

    async def add(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        def write(conn: sqlite3.Connection) -> int | None:
            added = row(
                conn, _ADD_COMMAND, (run_id, run_id, command, node_id, step, by, now(), run_id)
            )
            return int(added[0]) if added else None

        return await self._db.write(write, "grow")
