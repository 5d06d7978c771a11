"""The Postgres store, for deployments that outgrow the embedded file (several processes).

Leases use the database clock (`now()`), so workers on different machines agree on expiry.
History writes take the run's row lock (`FOR UPDATE`, or the `UPDATE` that ends the run), which
orders them against each other and against a take-over. Each commit that matters to another
process also sends a NOTIFY in the same transaction (delivered only if it commits):
`lats_events` ("run_id:seq"), `lats_cancel` (run id), `lats_command` (run id: a steering
command) and `lats_queued`; with Redis for the wake-ups (`notify` off) it sends none.

Connections are in autocommit, and each write is one statement (the fence, the event and the
end of a run joined by common table expressions): one round trip, where a transaction of
separate statements takes one per statement plus `BEGIN` and `COMMIT`. Only the NOTIFY, when
it is on, makes a write a transaction of two statements.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from datetime import datetime
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from agents.result import RunResult
from app.store import pg_check
from app.store.base import (
    FINISHED,
    UNFINISHED,
    Held,
    Lease,
    LeaseLost,
    RunRecord,
    RunStatus,
    StoreUnavailable,
    ThreadRecord,
    TooManyOpen,
    WebhookDelivery,
)
from app.store.reads import OPEN_SQL, Dialect, Row, RunReads, run_record
from app.store.upgrade import TERMINAL, result_of_terminal

EVENTS_CHANNEL = "lats_events"
CANCEL_CHANNEL = "lats_cancel"
QUEUED_CHANNEL = "lats_queued"
COMMAND_CHANNEL = "lats_command"

_SCHEMA_TEMPLATE = """
SELECT pg_advisory_xact_lock(hashtext('lats_schema'));
CREATE TABLE IF NOT EXISTS lats_runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params JSONB NOT NULL,
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    result JSONB
);
{added_columns}CREATE INDEX IF NOT EXISTS lats_runs_tenant ON lats_runs (tenant, created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_created ON lats_runs (created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_status ON lats_runs (status, created_at DESC);
CREATE TABLE IF NOT EXISTS lats_commands (
    run_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    command TEXT NOT NULL,
    node_id TEXT NOT NULL,
    step TEXT,
    sent_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS lats_threads (
    id TEXT PRIMARY KEY,
    tenant TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS lats_runs_thread ON lats_runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS lats_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
# Databases made before leases (or tenants, take-over counts, threads) existed get the columns
# added in place: a column each, with the ALTER TABLEs it takes, keyed by the column that tells.
_ADDED_COLUMNS = {
    "cancel_requested": (
        "owner TEXT",
        "lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch'",
        "cancel_requested BOOLEAN NOT NULL DEFAULT false",
    ),
    "tenant": ("tenant TEXT",),
    "takeovers": ("takeovers INTEGER NOT NULL DEFAULT 0",),
    "thread_id": ("thread_id TEXT",),
    "awaiting": ("awaiting TEXT", "answer JSONB"),
    "webhook": ("webhook TEXT", "delivery JSONB"),
}
# ALTER TABLE locks the table exclusively even when the column exists, and would queue behind
# every open transaction of the processes already running: only when the column is missing.
_ADD_IF_MISSING = """
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'lats_runs'
          AND column_name = '{column}'
    ) THEN
{alters}
    END IF;"""


def _add_missing_columns() -> str:
    """A DO block adding each missing column of `_ADDED_COLUMNS`."""
    blocks = []
    for column, adds in _ADDED_COLUMNS.items():
        alters = [f"        ALTER TABLE lats_runs ADD COLUMN IF NOT EXISTS {add};" for add in adds]
        blocks.append(_ADD_IF_MISSING.format(column=column, alters="\n".join(alters)))
    return "DO $$\nBEGIN{}\nEND\n$$;\n".format("".join(blocks))


# A pooled connection is waited for this long (also when the database refuses new ones), and a
# statement answered within `CALL_TIMEOUT_S` (a hung database answers nothing, ever).
POOL_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 20.0
_SCHEMA = _SCHEMA_TEMPLATE.format(added_columns=_add_missing_columns())
_OPEN = list(UNFINISHED)
_LEASE = "now() + make_interval(secs => %s)"
# In a claim by owner %s: 1 when the run is taken from another owner that still held it (its
# lease ran out), 0 for a free run (queued, or given back) or one's own.
_TAKEN = "(CASE WHEN owner IS NOT NULL AND owner <> %s THEN 1 ELSE 0 END)"
# A claim by owner %s for %s seconds of the run the WHERE clause that follows picks.
_CLAIM = (
    f"UPDATE lats_runs SET owner = %s, lease_until = {_LEASE}, takeovers = takeovers + {_TAKEN}"
    " WHERE"
)
# The next event of run %(run)s, for an INSERT … SELECT whose FROM is the fence.
_NEXT_EVENT = (
    "INSERT INTO lats_events (run_id, seq, type, data)"
    " SELECT id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM lats_events WHERE run_id = %(run)s),"
    " %(type)s, %(data)s"
)
# An event appended by the run's owner: nothing is inserted unless the run is open and held.
_APPEND = (
    "WITH held AS (SELECT id FROM lats_runs"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s) FOR UPDATE) "
    f"{_NEXT_EVENT} FROM held RETURNING seq"
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
_FINISH = f"WITH ended AS ({_END} RETURNING id) {_NEXT_EVENT} FROM ended RETURNING seq"
# The event a run stops on and its wait for an answer, in one statement.
_PAUSE = (
    "WITH paused AS (UPDATE lats_runs SET status = 'interrupted', awaiting = %(awaiting)s,"
    " answer = NULL, updated_at = now(), owner = NULL, lease_until = 'epoch'"
    " WHERE id = %(run)s AND owner = %(owner)s AND status = ANY(%(open)s) RETURNING id)"
    f" {_NEXT_EVENT} FROM paused RETURNING seq"
)
_CREATE = (
    "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at, owner,"
    " lease_until, tenant, thread_id, webhook) VALUES (%(run)s, %(task)s, %(params)s,"
    " %(status)s, %(created)s, %(updated)s, %(owner)s, CASE WHEN %(owner)s::text IS NULL THEN"
    " 'epoch'::timestamptz ELSE now() + make_interval(secs => %(ttl)s) END, %(tenant)s,"
    " %(thread)s, %(webhook)s)"
)
# Finished runs deleted with their events, among the runs `{pick}` selects.
_DELETE = (
    "WITH gone AS (DELETE FROM lats_runs WHERE id IN ({pick}) AND status = ANY(%(ended)s)"
    " RETURNING id), events AS (DELETE FROM lats_events WHERE run_id IN (SELECT id FROM gone)),"
    " commands AS (DELETE FROM lats_commands WHERE run_id IN (SELECT id FROM gone))"
    " SELECT count(*) FROM gone"
)
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
# A steering command of an open run, numbered after its others (the run's row lock orders
# two commands sent at once): its id, or no row.
_ADD_COMMAND = (
    "WITH held AS (SELECT id FROM lats_runs WHERE id = %(run)s AND status = ANY(%(open)s)"
    " FOR UPDATE)"
    " INSERT INTO lats_commands (run_id, id, command, node_id, step, sent_by, created_at)"
    " SELECT id, (SELECT COALESCE(MAX(id), 0) + 1 FROM lats_commands WHERE run_id = %(run)s),"
    " %(command)s, %(node)s, %(step)s, %(by)s, now() FROM held RETURNING id"
)
# Unfinished runs whose last event is terminal, with that event.
_LOGGED_ENDS = (
    "SELECT r.id, e.type, e.data FROM lats_runs r JOIN lats_events e ON e.run_id = r.id"
    " WHERE r.status = ANY(%s) AND e.type = ANY(%s)"
    " AND e.seq = (SELECT MAX(seq) FROM lats_events WHERE run_id = r.id)"
)
_SETTLE = (
    "UPDATE lats_runs SET status = %s, updated_at = now(), result = %s, owner = NULL,"
    " lease_until = 'epoch' WHERE id = %s AND status = ANY(%s)"
)
# A transaction-scoped advisory lock per tenant (its own key space: the first argument).
_TENANT_LOCK = "SELECT pg_advisory_xact_lock(7461, hashtext(%s))"
_COUNT_OPEN = (
    "SELECT count(*) FROM lats_runs WHERE tenant IS NOT DISTINCT FROM %s AND status = ANY(%s)"
)
_CREATE_STARTED = (
    f"WITH run AS ({_CREATE} RETURNING id)"
    " INSERT INTO lats_events (run_id, seq, type, data) SELECT id, 1, 'run_started', %(data)s"
    " FROM run"
)


def _json(result: RunResult | None) -> Jsonb | None:
    return Jsonb(result.model_dump(mode="json")) if result is not None else None


async def _end_logged_runs(conn: AsyncConnection[Any]) -> None:
    """Give each unfinished run whose terminal event is stored the status and result it
    stands for (a database written before the end was one statement). Idempotent; run in
    the schema's transaction, under its lock."""
    cur = await conn.execute(_LOGGED_ENDS, (_OPEN, list(TERMINAL)))
    for run_id, type_, data in await cur.fetchall():
        result = result_of_terminal(run_id, type_, data)
        await conn.execute(_SETTLE, (result.status, _json(result), run_id, _OPEN))


class PostgresRunStore(RunReads):
    """`RunStore` on Postgres through a connection pool."""

    dialect = Dialect(
        runs="lats_runs",
        events="lats_events",
        threads="lats_threads",
        commands="lats_commands",
        same="IS NOT DISTINCT FROM",
        no_limit=None,
    )

    def __init__(self, pool: AsyncConnectionPool, *, notify: bool = True) -> None:
        self._pool = pool
        # False when another channel (Redis) carries the wake-ups: no NOTIFY in transactions.
        self.notify = notify

    @classmethod
    async def open(cls, url: str, *, notify: bool = True) -> PostgresRunStore:
        # A connection a database restart closed is replaced before it is handed out, so the
        # first request after a restart does not fail on it, and a database that was away is
        # retried every second (app/store/pg_check.py).
        pool = pg_check.ReconnectingPool(
            url,
            min_size=1,
            max_size=10,
            open=False,
            timeout=POOL_TIMEOUT_S,
            kwargs={"autocommit": True, "connect_timeout": 5},
        )
        await pool.open(wait=True, timeout=10)
        async with pool.connection() as conn, conn.transaction():
            await conn.execute(_SCHEMA)
            await _end_logged_runs(conn)
        return cls(pool, notify=notify)

    async def close(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection for one call, bounded in time; an unreachable database (refused,
        dropped, hung) is `StoreUnavailable`."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S), self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, TimeoutError) as e:
            raise StoreUnavailable("the database is unreachable") from e

    async def _one(self, sql: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.replace("?", "%s"), args)
            return await cur.fetchone()

    async def _all(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.replace("?", "%s"), args)
            return await cur.fetchall()

    def _record(self, row: Row) -> RunRecord:
        # psycopg decodes every column (JSONB to dicts, timestamps to datetimes).
        return run_record(row)

    def _notifying(self, conn: AsyncConnection[Any]) -> AbstractAsyncContextManager[Any]:
        """A transaction around a write and its NOTIFY; nothing when no NOTIFY is sent."""
        return conn.transaction() if self.notify else nullcontext()

    async def _notify(self, conn: AsyncConnection[Any], channel: str, payload: str) -> None:
        if self.notify:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    # -- runs and leases -------------------------------------------------------------------------
    async def create_run(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        owner = lease.owner if lease is not None else None
        args = {
            "run": record.id,
            "task": record.task,
            "params": Jsonb(record.params),
            "status": record.status,
            "created": record.created_at,
            "updated": record.updated_at,
            "owner": owner,
            "ttl": lease.ttl_s if lease is not None else 0.0,
            "tenant": record.tenant,
            "thread": record.thread_id,
            "webhook": record.webhook,
            "data": started,
        }
        limited = max_open is not None
        async with (
            self._connection() as conn,
            conn.transaction() if limited else self._notifying(conn),
        ):
            if max_open is not None:
                await self._below_open_limit(conn, record.tenant, max_open)
            await conn.execute(_CREATE if started is None else _CREATE_STARTED, args)
            if owner is None:
                await self._notify(conn, QUEUED_CHANNEL, record.id)

    async def _below_open_limit(
        self, conn: AsyncConnection[Any], tenant: str | None, max_open: int
    ) -> None:
        """Inside the creating transaction: hold the tenant's lock until it commits (creations
        of one tenant queue here), then count; raises `TooManyOpen` at the limit. The count is
        a statement of its own so that it sees every creation committed before the lock."""
        await conn.execute(_TENANT_LOCK, (tenant or "",))
        cur = await conn.execute(_COUNT_OPEN, (tenant, _OPEN))
        row = await cur.fetchone()
        if row is not None and row[0] >= max_open:
            raise TooManyOpen(max_open)

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        row = await self._one(
            f"{_CLAIM} id = %s AND status = ANY(%s) AND (lease_until < now() OR owner = %s)"
            " RETURNING *",
            (owner, ttl_s, owner, run_id, _OPEN, owner),
        )
        return run_record(row) if row else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        claimed = await self.claim_some(owner, ttl_s, 1)
        return claimed[0] if claimed else None

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        rows = await self._all(
            f"{_CLAIM} id IN (SELECT id FROM lats_runs WHERE status = ANY(%s)"
            " AND awaiting IS NULL AND lease_until < now()"
            " ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED)"
            " RETURNING *",
            (owner, ttl_s, owner, _OPEN, limit),
        )
        return sorted((run_record(row) for row in rows), key=lambda record: record.created_at)

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"UPDATE lats_runs SET lease_until = {_LEASE}"
                " WHERE owner = %s AND status = ANY(%s) AND id = ANY(%s)"
                " RETURNING id, cancel_requested",
                (ttl_s, owner, _OPEN, run_ids),
            )
            rows = await cur.fetchall()
        return [Held(run_id=r["id"], cancel_requested=r["cancel_requested"]) for r in rows]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        async with self._connection() as conn, self._notifying(conn):
            cur = await conn.execute(
                "UPDATE lats_runs SET status = %s, updated_at = now(), owner = NULL,"
                " lease_until = 'epoch' WHERE id = %s AND owner = %s AND status = ANY(%s)",
                (status, run_id, owner, _OPEN),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            await self._notify(conn, QUEUED_CHANNEL, run_id)

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        async with self._connection() as conn:
            cur = await conn.execute(
                "UPDATE lats_runs SET status = 'running', updated_at = now()"
                " WHERE id = %s AND owner = %s AND status = ANY(%s) RETURNING cancel_requested",
                (run_id, owner, _OPEN),
            )
            row = await cur.fetchone()
        if row is None:
            raise LeaseLost(f"run {run_id} is not held by {owner}")
        return bool(row[0])

    async def cancel_requests(self, owner: str) -> list[str]:
        async with self._connection() as conn:
            cur = await conn.execute(
                "SELECT id FROM lats_runs WHERE owner = %s AND cancel_requested"
                " AND status = ANY(%s)",
                (owner, _OPEN),
            )
            rows = await cur.fetchall()
        return [r[0] for r in rows]

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        return await self._write_event(_PAUSE, run_id, owner, type_, data, awaiting=awaiting)

    async def answer_waiting(self, run_id: str, answer: dict[str, Any]) -> bool:
        async with self._connection() as conn, self._notifying(conn):
            cur = await conn.execute(
                "UPDATE lats_runs SET awaiting = NULL, answer = %s, status = 'queued',"
                " updated_at = now() WHERE id = %s AND awaiting IS NOT NULL"
                " AND status = ANY(%s)",
                (Jsonb(answer), run_id, _OPEN),
            )
            if cur.rowcount != 1:
                return False
            await self._notify(conn, QUEUED_CHANNEL, run_id)
        return True

    async def add_command(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        args = {
            "run": run_id,
            "open": _OPEN,
            "command": command,
            "node": node_id,
            "step": step,
            "by": by,
        }
        async with self._connection() as conn, self._notifying(conn):
            cur = await conn.execute(_ADD_COMMAND, args)
            row = await cur.fetchone()
            if row is not None:
                await self._notify(conn, COMMAND_CHANNEL, run_id)
        return int(row[0]) if row else None

    async def record_delivery(self, run_id: str, delivery: WebhookDelivery) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE lats_runs SET delivery = %s WHERE id = %s",
                (Jsonb(delivery.model_dump(mode="json")), run_id),
            )

    async def request_cancel(self, run_id: str) -> None:
        async with self._connection() as conn, self._notifying(conn):
            await conn.execute(
                "UPDATE lats_runs SET cancel_requested = true WHERE id = %s AND status = ANY(%s)",
                (run_id, _OPEN),
            )
            await self._notify(conn, CANCEL_CHANNEL, run_id)

    async def count_unclaimed(self) -> int:
        return await self._count(
            f"SELECT count(*) AS n FROM lats_runs WHERE {OPEN_SQL} AND awaiting IS NULL"
            " AND lease_until < now()",
            (),
        )

    # -- the event log -------------------------------------------------------------------------
    async def append_event(self, run_id: str, owner: str, type_: str, data: str) -> int:
        return await self._write_event(_APPEND, run_id, owner, type_, data)

    async def append_events(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        if not events:
            return []
        args = {
            "run": run_id,
            "owner": owner,
            "open": _OPEN,
            "types": [type_ for type_, _ in events],
            "datas": [data for _, data in events],
        }
        async with self._connection() as conn, self._notifying(conn):
            cur = await conn.execute(_APPEND_MANY, args)
            seqs = sorted(int(row[0]) for row in await cur.fetchall())
            if not seqs:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            await self._notify(conn, EVENTS_CHANNEL, f"{run_id}:{seqs[-1]}")
        return seqs

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        return await self._write_event(
            _FINISH, run_id, owner, type_, data, status=result.status, result=_json(result)
        )

    async def _write_event(
        self, statement: str, run_id: str, owner: str, type_: str, data: str, **more: Any
    ) -> int:
        """Run an event-writing statement of the owner (with the `more` arguments it takes);
        the event's id."""
        args = {"run": run_id, "owner": owner, "open": _OPEN, "type": type_, "data": data, **more}
        async with self._connection() as conn, self._notifying(conn):
            cur = await conn.execute(statement, args)
            row = await cur.fetchone()
            if row is None:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            seq = int(row[0])
            await self._notify(conn, EVENTS_CHANNEL, f"{run_id}:{seq}")
        return seq

    async def delete_run(self, run_id: str) -> bool:
        return await self._delete("%(run)s", {"run": run_id}) == 1

    async def create_thread(self, thread: ThreadRecord) -> None:
        async with self._connection() as conn:
            await conn.execute(
                "INSERT INTO lats_threads (id, tenant, created_at) VALUES (%s, %s, %s)",
                (thread.id, thread.tenant, thread.created_at),
            )

    async def delete_thread(self, thread_id: str) -> bool:
        # One statement: nothing is deleted while a run of the thread is open.
        async with self._connection() as conn:
            cur = await conn.execute(_DELETE_THREAD, {"thread": thread_id, "open": _OPEN})
            row = await cur.fetchone()
        return bool(row and row[0])

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        pick = (
            "SELECT id FROM lats_runs WHERE status = ANY(%(ended)s) AND updated_at < %(cutoff)s"
            " LIMIT %(limit)s"
        )
        return await self._delete(pick, {"cutoff": cutoff, "limit": limit})

    async def _delete(self, pick: str, args: dict[str, Any]) -> int:
        async with self._connection() as conn:
            cur = await conn.execute(_DELETE.format(pick=pick), {**args, "ended": list(FINISHED)})
            row = await cur.fetchone()
        return int(row[0]) if row else 0
