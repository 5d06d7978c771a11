"""The Postgres store, for deployments that outgrow the embedded file (several processes).

Leases use the database clock (`now()`), so workers on different machines agree on expiry.
History writes take the run's row lock (`FOR UPDATE`), which orders them against each other
and against a take-over. Each commit that matters to another process also sends a NOTIFY in
the same transaction (delivered only if it commits): `lats_events` ("run_id:seq"),
`lats_cancel` (run id) and `lats_queued`; with Redis for the wake-ups (`notify` off) it sends
none.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from agents import pg_check
from app.store.base import UNFINISHED, Held, LeaseLost, RunRecord, RunStatus, StoredEvent

EVENTS_CHANNEL = "lats_events"
CANCEL_CHANNEL = "lats_cancel"
QUEUED_CHANNEL = "lats_queued"

_SCHEMA = """
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
DO $$
BEGIN
    -- ALTER TABLE locks the table exclusively even when the column exists, and would queue
    -- behind every open transaction of the processes already running: only when needed.
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'lats_runs'
          AND column_name = 'cancel_requested'
    ) THEN
        ALTER TABLE lats_runs ADD COLUMN IF NOT EXISTS owner TEXT;
        ALTER TABLE lats_runs
            ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch';
        ALTER TABLE lats_runs
            ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'lats_runs'
          AND column_name = 'tenant'
    ) THEN
        ALTER TABLE lats_runs ADD COLUMN IF NOT EXISTS tenant TEXT;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS lats_runs_tenant ON lats_runs (tenant, created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_created ON lats_runs (created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_status ON lats_runs (status, created_at DESC);
CREATE TABLE IF NOT EXISTS lats_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
_OPEN = list(UNFINISHED)
_LEASE = "now() + make_interval(secs => %s)"


def _record(row: dict[str, Any]) -> RunRecord:
    return RunRecord(
        id=row["id"],
        task=row["task"],
        params=row["params"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        result=row["result"],
        owner=row["owner"],
        tenant=row["tenant"],
        cancel_requested=row["cancel_requested"],
    )


def _json(result: dict[str, Any] | None) -> Jsonb | None:
    return Jsonb(json.loads(json.dumps(result))) if result is not None else None


class PostgresRunStore:
    """`RunStore` on Postgres through a connection pool."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool
        # False when another channel (Redis) carries the wake-ups: no NOTIFY in transactions.
        self.notify = True

    @classmethod
    async def open(cls, url: str) -> PostgresRunStore:
        # `check`: a connection a database restart closed is replaced before it is handed
        # out, so the first request after a restart does not fail on it (agents/pg_check.py).
        pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=10,
            open=False,
            timeout=10,
            check=pg_check.acheck,
        )
        await pool.open(wait=True, timeout=10)
        async with pool.connection() as conn:
            await conn.execute(_SCHEMA)
        return cls(pool)

    async def close(self) -> None:
        await self._pool.close()

    @staticmethod
    async def _fence(conn: AsyncConnection[Any], run_id: str, owner: str) -> None:
        cur = await conn.execute(
            "SELECT 1 FROM lats_runs WHERE id = %s AND owner = %s AND status = ANY(%s) FOR UPDATE",
            (run_id, owner, _OPEN),
        )
        if await cur.fetchone() is None:
            raise LeaseLost(f"run {run_id} is not held by {owner}")

    async def _notify(self, conn: AsyncConnection[Any], channel: str, payload: str) -> None:
        if self.notify:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def _insert_event(
        self, conn: AsyncConnection[Any], run_id: str, type_: str, data: str
    ) -> int:
        cur = await conn.execute(
            "INSERT INTO lats_events (run_id, seq, type, data)"
            " SELECT %s, COALESCE(MAX(seq), 0) + 1, %s, %s FROM lats_events WHERE run_id = %s"
            " RETURNING seq",
            (run_id, type_, data, run_id),
        )
        row = await cur.fetchone()
        assert row is not None
        seq = int(row[0])
        await self._notify(conn, EVENTS_CHANNEL, f"{run_id}:{seq}")
        return seq

    # -- runs and leases -------------------------------------------------------------------------
    async def create_run(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        owner: str | None = None,
        ttl_s: float = 0.0,
    ) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at, owner,"
                f" lease_until, tenant) VALUES (%s, %s, %s, %s, %s, %s, %s,"
                f" CASE WHEN %s::text IS NULL THEN 'epoch'::timestamptz ELSE {_LEASE} END, %s)",
                (
                    record.id,
                    record.task,
                    Jsonb(record.params),
                    record.status,
                    record.created_at,
                    record.updated_at,
                    owner,
                    owner,
                    ttl_s,
                    record.tenant,
                ),
            )
            if started is not None:
                await conn.execute(
                    "INSERT INTO lats_events (run_id, seq, type, data)"
                    " VALUES (%s, 1, 'run_started', %s)",
                    (record.id, started),
                )
            if owner is None:
                await self._notify(conn, QUEUED_CHANNEL, record.id)

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"UPDATE lats_runs SET owner = %s, lease_until = {_LEASE}"
                " WHERE id = %s AND status = ANY(%s) AND (lease_until < now() OR owner = %s)"
                " RETURNING *",
                (owner, ttl_s, run_id, _OPEN, owner),
            )
            row = await cur.fetchone()
        return _record(row) if row else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"UPDATE lats_runs SET owner = %s, lease_until = {_LEASE} WHERE id = ("
                " SELECT id FROM lats_runs WHERE status = ANY(%s) AND lease_until < now()"
                " ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *",
                (owner, ttl_s, _OPEN),
            )
            row = await cur.fetchone()
        return _record(row) if row else None

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"UPDATE lats_runs SET lease_until = {_LEASE}"
                " WHERE owner = %s AND status = ANY(%s) AND id = ANY(%s)"
                " RETURNING id, cancel_requested",
                (ttl_s, owner, _OPEN, run_ids),
            )
            rows = await cur.fetchall()
        return [Held(run_id=r["id"], cancel_requested=r["cancel_requested"]) for r in rows]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE lats_runs SET status = %s, updated_at = now(), owner = NULL,"
                " lease_until = 'epoch' WHERE id = %s AND owner = %s AND status = ANY(%s)",
                (status, run_id, owner, _OPEN),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            await self._notify(conn, QUEUED_CHANNEL, run_id)

    async def mark_running(self, run_id: str, owner: str) -> bool:
        async with self._pool.connection() as conn:
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
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT id FROM lats_runs WHERE owner = %s AND cancel_requested"
                " AND status = ANY(%s)",
                (owner, _OPEN),
            )
            rows = await cur.fetchall()
        return [r[0] for r in rows]

    async def request_cancel(self, run_id: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE lats_runs SET cancel_requested = true WHERE id = %s AND status = ANY(%s)",
                (run_id, _OPEN),
            )
            await self._notify(conn, CANCEL_CHANNEL, run_id)

    async def count_unclaimed(self) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM lats_runs WHERE status = ANY(%s) AND lease_until < now()",
                (_OPEN,),
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # -- the event log -------------------------------------------------------------------------
    async def append_event(self, run_id: str, owner: str, type_: str, data: str) -> int:
        async with self._pool.connection() as conn:
            await self._fence(conn, run_id, owner)
            return await self._insert_event(conn, run_id, type_, data)

    async def finish(
        self,
        run_id: str,
        owner: str,
        type_: str,
        data: str,
        status: RunStatus,
        result: dict[str, Any] | None,
    ) -> int:
        async with self._pool.connection() as conn:
            await self._fence(conn, run_id, owner)
            seq = await self._insert_event(conn, run_id, type_, data)
            await self._end(conn, run_id, status, result)
            return seq

    async def settle(
        self, run_id: str, owner: str, status: RunStatus, result: dict[str, Any] | None
    ) -> None:
        async with self._pool.connection() as conn:
            await self._fence(conn, run_id, owner)
            await self._end(conn, run_id, status, result)

    @staticmethod
    async def _end(
        conn: AsyncConnection[Any], run_id: str, status: RunStatus, result: dict[str, Any] | None
    ) -> None:
        await conn.execute(
            "UPDATE lats_runs SET status = %s, updated_at = now(), result = %s, owner = NULL,"
            " lease_until = 'epoch' WHERE id = %s",
            (status, _json(result), run_id),
        )

    # -- reading -----------------------------------------------------------------------------------
    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute("SELECT * FROM lats_runs WHERE id = %s", (run_id,))
            row = await cur.fetchone()
        return _record(row) if row else None

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        conditions: list[str] = []
        args: list[Any] = []
        if status is not None:
            conditions.append("status = %s")
            args.append(status)
        if tenant is not None:
            conditions.append("tenant = %s")
            args.append(tenant)
        where = "WHERE " + " AND ".join(conditions) if conditions else ""
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"SELECT * FROM lats_runs {where}"
                " ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s",
                [*args, limit, offset],
            )
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def count_open(self, tenant: str | None) -> int:
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT COUNT(*) FROM lats_runs WHERE tenant IS NOT DISTINCT FROM %s"
                " AND status = ANY(%s)",
                (tenant, _OPEN),
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def events_after(
        self, run_id: str, after: int, limit: int | None = None
    ) -> list[StoredEvent]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                "SELECT seq, type, data FROM lats_events WHERE run_id = %s AND seq > %s"
                " ORDER BY seq LIMIT %s",
                (run_id, after, limit),
            )
            rows = await cur.fetchall()
        return [StoredEvent(seq=r["seq"], type=r["type"], data=r["data"]) for r in rows]

    async def last_seq(self, run_id: str) -> int:
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM lats_events WHERE run_id = %s", (run_id,)
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def ping(self) -> None:
        async with self._pool.connection() as conn:
            await conn.execute("SELECT 1")
