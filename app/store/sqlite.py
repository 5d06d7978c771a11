"""The embedded store: one SQLite file in WAL mode. Several processes may share it: writes are
`BEGIN IMMEDIATE` transactions (the write lock is taken up front, so the busy timeout applies
and no transaction has to upgrade a read lock), leases are wall-clock seconds (one machine)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from app.store.base import Held, LeaseLost, RunRecord, RunStatus, StoredEvent

BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    result TEXT,
    owner TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    tenant TEXT
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at DESC);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
# Files written before leases (or tenants) existed get the columns added in place.
_ADDED_COLUMNS = {
    "owner": "TEXT",
    "lease_until": "REAL NOT NULL DEFAULT 0",
    "cancel_requested": "INTEGER NOT NULL DEFAULT 0",
    "tenant": "TEXT",
}
_TENANT_INDEX = "CREATE INDEX IF NOT EXISTS runs_tenant ON runs (tenant, created_at DESC)"
_OPEN = "status IN ('queued', 'running', 'interrupted')"  # base.UNFINISHED


# The next event of a run, if `owner` holds it: its seq, or no row.
_APPEND = f"""
INSERT INTO events (run_id, seq, type, data)
SELECT ?, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = ?), 0) + 1, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ? AND {_OPEN})
RETURNING seq
"""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _record(row: aiosqlite.Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        task=row["task"],
        params=json.loads(row["params"]),
        status=row["status"],
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        result=json.loads(row["result"]) if row["result"] else None,
        owner=row["owner"],
        tenant=row["tenant"],
        cancel_requested=bool(row["cancel_requested"]),
    )


class SqliteRunStore:
    """`RunStore` on SQLite, through one connection per process."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        # One connection carries one transaction at a time: statements of two coroutines must
        # not interleave inside a BEGIN … COMMIT.
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteRunStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        store = cls(conn)
        async with store._write():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    await conn.execute(statement)
            async with conn.execute("PRAGMA table_info(runs)") as cur:
                have = {row["name"] for row in await cur.fetchall()}
            for name, kind in _ADDED_COLUMNS.items():
                if name not in have:
                    await conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            await conn.execute(_TENANT_INDEX)
        return store

    async def close(self) -> None:
        await self._conn.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

    async def _one(self, sql: str, args: tuple[Any, ...]) -> aiosqlite.Row | None:
        # One trip to the connection's thread (a cursor would take three: execute, fetch,
        # close), and the callers hold the store's lock meanwhile.
        rows = await self._conn.execute_fetchall(sql, args)
        return next(iter(rows), None)

    async def _fence(self, run_id: str, owner: str) -> None:
        row = await self._one(
            f"SELECT 1 FROM runs WHERE id = ? AND owner = ? AND {_OPEN}", (run_id, owner)
        )
        if row is None:
            raise LeaseLost(f"run {run_id} is not held by {owner}")

    async def _next_seq(self, run_id: str) -> int:
        row = await self._one(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?", (run_id,)
        )
        assert row is not None
        return int(row[0])

    # -- runs and leases -------------------------------------------------------------------------
    async def create_run(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        owner: str | None = None,
        ttl_s: float = 0.0,
    ) -> None:
        until = time.time() + ttl_s if owner else 0.0
        async with self._write() as conn:
            await conn.execute(
                "INSERT INTO runs (id, task, params, status, created_at, updated_at, result,"
                " owner, lease_until, tenant) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                (
                    record.id,
                    record.task,
                    json.dumps(record.params),
                    record.status,
                    record.created_at.isoformat(),
                    record.updated_at.isoformat(),
                    owner,
                    until,
                    record.tenant,
                ),
            )
            if started is not None:
                await conn.execute(
                    "INSERT INTO events (run_id, seq, type, data) VALUES (?, 1, 'run_started', ?)",
                    (record.id, started),
                )

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        now = time.time()
        async with self._write() as conn:
            cur = await conn.execute(
                f"UPDATE runs SET owner = ?, lease_until = ? WHERE id = ? AND {_OPEN}"
                " AND (lease_until < ? OR owner = ?)",
                (owner, now + ttl_s, run_id, now, owner),
            )
            if cur.rowcount != 1:
                return None
            row = await self._one("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _record(row) if row else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        now = time.time()
        # Look before taking the write lock: most sweeps find nothing, and a read does not
        # queue behind other processes' writes.
        async with self._lock:
            if (
                await self._one(f"SELECT 1 FROM runs WHERE {_OPEN} AND lease_until < ?", (now,))
                is None
            ):
                return None
        async with self._write() as conn:
            row = await self._one(
                f"SELECT id FROM runs WHERE {_OPEN} AND lease_until < ?"
                " ORDER BY created_at LIMIT 1",
                (now,),
            )
            if row is None:
                return None
            await conn.execute(
                "UPDATE runs SET owner = ?, lease_until = ? WHERE id = ?",
                (owner, now + ttl_s, row["id"]),
            )
            claimed = await self._one("SELECT * FROM runs WHERE id = ?", (row["id"],))
        return _record(claimed) if claimed else None

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        marks = ", ".join("?" for _ in run_ids)
        async with self._write() as conn:
            await conn.execute(
                f"UPDATE runs SET lease_until = ? WHERE owner = ? AND {_OPEN} AND id IN ({marks})",
                (time.time() + ttl_s, owner, *run_ids),
            )
            async with conn.execute(
                f"SELECT id, cancel_requested FROM runs WHERE owner = ? AND {_OPEN}"
                f" AND id IN ({marks})",
                (owner, *run_ids),
            ) as cur:
                rows = await cur.fetchall()
        return [Held(run_id=r["id"], cancel_requested=bool(r["cancel_requested"])) for r in rows]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        async with self._write() as conn:
            cur = await conn.execute(
                "UPDATE runs SET status = ?, updated_at = ?, owner = NULL, lease_until = 0"
                f" WHERE id = ? AND owner = ? AND {_OPEN}",
                (status, _now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")

    async def mark_running(self, run_id: str, owner: str) -> bool:
        async with self._write() as conn:
            cur = await conn.execute(
                f"UPDATE runs SET status = 'running', updated_at = ? WHERE id = ? AND owner = ?"
                f" AND {_OPEN}",
                (_now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            row = await self._one("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
        return bool(row and row[0])

    async def cancel_requests(self, owner: str) -> list[str]:
        async with (
            self._lock,
            self._conn.execute(
                f"SELECT id FROM runs WHERE owner = ? AND cancel_requested = 1 AND {_OPEN}",
                (owner,),
            ) as cur,
        ):
            rows = await cur.fetchall()
        return [r["id"] for r in rows]

    async def request_cancel(self, run_id: str) -> None:
        async with self._write() as conn:
            await conn.execute(
                f"UPDATE runs SET cancel_requested = 1 WHERE id = ? AND {_OPEN}", (run_id,)
            )

    # -- the event log -------------------------------------------------------------------------
    async def append_event(self, run_id: str, owner: str, type_: str, data: str) -> int:
        # One statement (fence, next seq and insert) in one trip to the connection's thread:
        # the store's lock is held for three trips instead of nine, and under load every
        # run's events queue on it.
        async with self._write() as conn:
            rows = await conn.execute_fetchall(
                _APPEND, (run_id, run_id, type_, data, run_id, owner)
            )
        if not rows:
            raise LeaseLost(f"run {run_id} is not held by {owner}")
        return int(next(iter(rows))[0])

    async def finish(
        self,
        run_id: str,
        owner: str,
        type_: str,
        data: str,
        status: RunStatus,
        result: dict[str, Any] | None,
    ) -> int:
        async with self._write() as conn:
            await self._fence(run_id, owner)
            seq = await self._next_seq(run_id)
            await conn.execute(
                "INSERT INTO events (run_id, seq, type, data) VALUES (?, ?, ?, ?)",
                (run_id, seq, type_, data),
            )
            await self._end(conn, run_id, status, result)
        return seq

    async def settle(
        self, run_id: str, owner: str, status: RunStatus, result: dict[str, Any] | None
    ) -> None:
        async with self._write() as conn:
            await self._fence(run_id, owner)
            await self._end(conn, run_id, status, result)

    @staticmethod
    async def _end(
        conn: aiosqlite.Connection, run_id: str, status: RunStatus, result: dict[str, Any] | None
    ) -> None:
        await conn.execute(
            "UPDATE runs SET status = ?, updated_at = ?, result = ?, owner = NULL,"
            " lease_until = 0 WHERE id = ?",
            (status, _now(), json.dumps(result) if result is not None else None, run_id),
        )

    # -- reading -----------------------------------------------------------------------------------
    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._lock:
            row = await self._one("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _record(row) if row else None

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if tenant is not None:
            where.append("tenant = ?")
            args.append(tenant)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args += [limit, offset]
        async with self._lock, self._conn.execute(sql, args) as cur:
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def count_open(self, tenant: str | None) -> int:
        async with self._lock:
            row = await self._one(
                f"SELECT COUNT(*) FROM runs WHERE tenant IS ? AND {_OPEN}", (tenant,)
            )
        return int(row[0]) if row else 0

    async def events_after(
        self, run_id: str, after: int, limit: int | None = None
    ) -> list[StoredEvent]:
        async with (
            self._lock,
            self._conn.execute(
                "SELECT seq, type, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq"
                " LIMIT ?",
                (run_id, after, -1 if limit is None else limit),
            ) as cur,
        ):
            rows = await cur.fetchall()
        return [StoredEvent(seq=r["seq"], type=r["type"], data=r["data"]) for r in rows]

    async def last_seq(self, run_id: str) -> int:
        async with self._lock:
            return await self._next_seq(run_id) - 1

    async def count_unclaimed(self) -> int:
        async with self._lock:
            row = await self._one(
                f"SELECT count(*) FROM runs WHERE {_OPEN} AND lease_until < ?", (time.time(),)
            )
        return int(row[0]) if row else 0

    async def data_version(self) -> int:
        """Changes whenever another connection (another process) commits to the file."""
        async with self._lock:
            row = await self._one("PRAGMA data_version", ())
        return int(row[0]) if row else 0

    async def ping(self) -> None:
        async with self._lock:
            await self._one("SELECT 1", ())
