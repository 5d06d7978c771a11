"""Waits on Postgres: the event a run stops on and its wait for an answer in one statement; an
answer queues the run again."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from app.store.postgres.db import OPEN, QUEUED_CHANNEL, PostgresDb
from app.store.postgres.events import NEXT_EVENT, write_event
from app.store.reads import Part

# The event a run stops on and its wait for an answer, in one statement.
_PAUSE = (
    "WITH paused AS (UPDATE lats_runs SET status = 'interrupted', awaiting = %(awaiting)s,"
    " answer = NULL, updated_at = now(), owner = NULL, lease_until = 'epoch'"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s) RETURNING id)"
    f" {NEXT_EVENT} FROM paused RETURNING seq"
)


class PostgresWaits(Part[PostgresDb]):
    """`Waits` on Postgres."""

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        return await write_event(self._db, _PAUSE, run_id, owner, type_, data, awaiting=awaiting)

    async def answer(self, run_id: str, answer: dict[str, Any]) -> bool:
        async with self._db.connection() as conn, self._db.notifying(conn):
            cur = await conn.execute(
                "UPDATE lats_runs SET awaiting = NULL, answer = %s, status = 'queued',"
                " updated_at = now() WHERE id = %s AND awaiting IS NOT NULL"
                " AND status = ANY(%s)",
                (Jsonb(answer), run_id, OPEN),
            )
            if cur.rowcount != 1:
                return False
            await self._db.send(conn, QUEUED_CHANNEL, run_id)
        return True
