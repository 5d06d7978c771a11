"""Waits on SQLite: the event a run stops on, stored with its wait for an answer in one write;
an answer queues the run again."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from app.store.reads import Part
from app.store.sqlite.db import OPEN, SqliteDb, now
from app.store.sqlite.events import append_fenced


class SqliteWaits(Part[SqliteDb]):
    """`Waits` on SQLite."""

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            seq = append_fenced(conn, run_id, owner, type_, data)
            conn.execute(
                "UPDATE runs SET status = 'interrupted', awaiting = ?, answer = NULL,"
                " updated_at = ?, owner = NULL, lease_until = 0 WHERE id = ?",
                (awaiting, now(), run_id),
            )
            return seq

        return await self._db.write(write, "end")

    async def answer(self, run_id: str, answer: dict[str, Any]) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE runs SET awaiting = NULL, answer = ?, status = 'queued', updated_at = ?"
                f" WHERE id = ? AND awaiting IS NOT NULL AND {OPEN}",
                (json.dumps(answer), now(), run_id),
            )
            return cur.rowcount == 1

        return await self._db.write(write)
