"""A run's event log on Postgres: each write is one statement that fences it by the run's row
lock (`FOR UPDATE`, or the `UPDATE` that ends the run), which orders the writes against each
other and against a take-over, and takes the next id; the end of a run is its terminal event
and its status in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.result import RunResult
from app.store.base import LeaseLost
from app.store.postgres.db import EVENTS_CHANNEL, OPEN, PostgresDb, jsonb
from app.store.reads import EventReads

# The next event of run %(run)s, for an INSERT … SELECT whose FROM is the fence.
NEXT_EVENT = (
    "INSERT INTO lats_events (run_id, seq, type, data)"
    " SELECT id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM lats_events WHERE run_id = %(run)s),"
    " %(type)s, %(data)s"
)
# An event appended by the run's owner: nothing is inserted unless the run is open and held.
_APPEND = (
    "WITH held AS (SELECT id FROM lats_runs"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s) FOR UPDATE) "
    f"{NEXT_EVENT} FROM held RETURNING seq"
)
# Several events appended by the run's owner at once, numbered in the order given.
_APPEND_MANY = (
    "WITH held AS (SELECT id FROM lats_runs"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s) FOR UPDATE) "
    "INSERT INTO lats_events (run_id, seq, type, data)"
    " SELECT held.id, (SELECT COALESCE(MAX(seq), 0) FROM lats_events WHERE run_id = %(run)s)"
    " + given.n, given.type, given.data FROM held,"
    " unnest(%(types)s::text[], %(datas)s::text[]) WITH ORDINALITY AS given(type, data, n)"
    " RETURNING seq"
)
_END = (
    "UPDATE lats_runs SET status = %(status)s, updated_at = now(), result = %(result)s,"
    " owner = NULL, lease_until = 'epoch', awaiting = NULL"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s)"
)
# The terminal event and the run's end in one statement: both or neither.
_FINISH = f"WITH ended AS ({_END} RETURNING id) {NEXT_EVENT} FROM ended RETURNING seq"


async def write_event(
    db: PostgresDb, statement: str, run_id: str, owner: str, type_: str, data: str, **more: Any
) -> int:
    """Run an event-writing statement of the owner (with the `more` arguments it takes), and
    its NOTIFY; the event's id, or `LeaseLost` when the statement wrote nothing."""
    args = {"run": run_id, "owner": owner, "open": OPEN, "type": type_, "data": data, **more}
    async with db.connection() as conn, db.notifying(conn):
        cur = await conn.execute(statement, args)
        row = await cur.fetchone()
        if row is None:
            raise LeaseLost(f"run {run_id} is not held by {owner}")
        seq = int(row[0])
        await db.send(conn, EVENTS_CHANNEL, f"{run_id}:{seq}")
    return seq


class PostgresEvents(EventReads[PostgresDb]):
    """`EventLog` on Postgres."""

    async def append(self, run_id: str, owner: str, type_: str, data: str) -> int:
        return await write_event(self._db, _APPEND, run_id, owner, type_, data)

    async def append_many(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        if not events:
            return []
        args = {
            "run": run_id,
            "owner": owner,
            "open": OPEN,
            "types": [type_ for type_, _ in events],
            "datas": [data for _, data in events],
        }
        async with self._db.connection() as conn, self._db.notifying(conn):
            cur = await conn.execute(_APPEND_MANY, args)
            seqs = sorted(int(row[0]) for row in await cur.fetchall())
            if not seqs:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            await self._db.send(conn, EVENTS_CHANNEL, f"{run_id}:{seqs[-1]}")
        return seqs

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        return await write_event(
            self._db,
            _FINISH,
            run_id,
            owner,
            type_,
            data,
            status=result.status,
            result=jsonb(result),
        )
