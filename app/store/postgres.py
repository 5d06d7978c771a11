"""The Postgres store, for deployments that outgrow the embedded file."""

from __future__ import annotations

import json
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from app.store.base import RunRecord, RunStatus, StoredEvent

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lats_runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params JSONB NOT NULL,
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    result JSONB
);
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


def _record(row: dict[str, Any]) -> RunRecord:
    return RunRecord(
        id=row["id"],
        task=row["task"],
        params=row["params"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        result=row["result"],
    )


class PostgresRunStore:
    """`RunStore` on Postgres through a connection pool."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, url: str) -> PostgresRunStore:
        pool = AsyncConnectionPool(url, min_size=1, max_size=10, open=False, timeout=10)
        await pool.open(wait=True, timeout=10)
        async with pool.connection() as conn:
            await conn.execute(_SCHEMA)
        return cls(pool)

    async def close(self) -> None:
        await self._pool.close()

    async def create_run(self, record: RunRecord) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    record.id,
                    record.task,
                    Jsonb(record.params),
                    record.status,
                    record.created_at,
                    record.updated_at,
                ),
            )

    async def set_status(
        self, run_id: str, status: RunStatus, result: dict[str, Any] | None = None
    ) -> None:
        async with self._pool.connection() as conn:
            if result is None:
                await conn.execute(
                    "UPDATE lats_runs SET status = %s, updated_at = now() WHERE id = %s",
                    (status, run_id),
                )
            else:
                await conn.execute(
                    "UPDATE lats_runs SET status = %s, updated_at = now(), result = %s"
                    " WHERE id = %s",
                    (status, Jsonb(json.loads(json.dumps(result))), run_id),
                )

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute("SELECT * FROM lats_runs WHERE id = %s", (run_id,))
            row = await cur.fetchone()
        return _record(row) if row else None

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int
    ) -> list[RunRecord]:
        where = "WHERE status = %s" if status is not None else ""
        args: list[Any] = [status] if status is not None else []
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"SELECT * FROM lats_runs {where}"
                " ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s",
                [*args, limit, offset],
            )
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def runs_with_status(self, statuses: tuple[RunStatus, ...]) -> list[RunRecord]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                "SELECT * FROM lats_runs WHERE status = ANY(%s) ORDER BY created_at",
                (list(statuses),),
            )
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def append_event(self, run_id: str, seq: int, type_: str, data: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO lats_events (run_id, seq, type, data) VALUES (%s, %s, %s, %s)",
                (run_id, seq, type_, data),
            )

    async def events_after(self, run_id: str, after: int) -> list[StoredEvent]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                "SELECT seq, type, data FROM lats_events WHERE run_id = %s AND seq > %s"
                " ORDER BY seq",
                (run_id, after),
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
