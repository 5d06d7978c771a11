"""The embedded store: one SQLite file in WAL mode, written through a single connection so
concurrent runs never meet "database is locked"."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from app.store.base import RunRecord, RunStatus, StoredEvent

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    result TEXT
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
    )


class SqliteRunStore:
    """`RunStore` on SQLite."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    @classmethod
    async def open(cls, path: Path) -> SqliteRunStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA busy_timeout=5000")
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.executescript(_SCHEMA)
        await conn.commit()
        return cls(conn)

    async def close(self) -> None:
        await self._conn.close()

    async def create_run(self, record: RunRecord) -> None:
        await self._conn.execute(
            "INSERT INTO runs (id, task, params, status, created_at, updated_at, result)"
            " VALUES (?, ?, ?, ?, ?, ?, NULL)",
            (
                record.id,
                record.task,
                json.dumps(record.params),
                record.status,
                record.created_at.isoformat(),
                record.updated_at.isoformat(),
            ),
        )
        await self._conn.commit()

    async def set_status(
        self, run_id: str, status: RunStatus, result: dict[str, Any] | None = None
    ) -> None:
        if result is None:
            await self._conn.execute(
                "UPDATE runs SET status = ?, updated_at = ? WHERE id = ?",
                (status, _now(), run_id),
            )
        else:
            await self._conn.execute(
                "UPDATE runs SET status = ?, updated_at = ?, result = ? WHERE id = ?",
                (status, _now(), json.dumps(result), run_id),
            )
        await self._conn.commit()

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)) as cur:
            row = await cur.fetchone()
        return _record(row) if row else None

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int
    ) -> list[RunRecord]:
        sql = "SELECT * FROM runs"
        args: list[Any] = []
        if status is not None:
            sql += " WHERE status = ?"
            args.append(status)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args += [limit, offset]
        async with self._conn.execute(sql, args) as cur:
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def runs_with_status(self, statuses: tuple[RunStatus, ...]) -> list[RunRecord]:
        marks = ", ".join("?" for _ in statuses)
        sql = f"SELECT * FROM runs WHERE status IN ({marks}) ORDER BY created_at"
        async with self._conn.execute(sql, statuses) as cur:
            rows = await cur.fetchall()
        return [_record(r) for r in rows]

    async def append_event(self, run_id: str, seq: int, type_: str, data: str) -> None:
        await self._conn.execute(
            "INSERT INTO events (run_id, seq, type, data) VALUES (?, ?, ?, ?)",
            (run_id, seq, type_, data),
        )
        await self._conn.commit()

    async def events_after(self, run_id: str, after: int) -> list[StoredEvent]:
        async with self._conn.execute(
            "SELECT seq, type, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after),
        ) as cur:
            rows = await cur.fetchall()
        return [StoredEvent(seq=r["seq"], type=r["type"], data=r["data"]) for r in rows]

    async def last_seq(self, run_id: str) -> int:
        async with self._conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?", (run_id,)
        ) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def ping(self) -> None:
        async with self._conn.execute("SELECT 1") as cur:
            await cur.fetchone()
