"""The run tables as `lats migrate` reads and writes them: run and thread ids in key order, a
thread, a run and its events written whole (one transaction, lease cleared), whole-table
counts (the collection and assistant tables' too: app/store/migrate_collections.py and
migrate_assistants.py read and write those), and the ledger that says which units of the target
a migration wrote and from which source.

Reading a run's content goes through the stores themselves (`store.runs.get`,
`store.events.after`); only what the `RunStore` interface has no call for lives here. Both
classes are `RunTables` (app/store/migrate_units.py).
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

import aiosqlite
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from app.store.base import RunRecord, StoredEvent, ThreadRecord
from app.store.migrate_assistants import PostgresAssistantTables, SqliteAssistantTables
from app.store.migrate_collections import PostgresCollectionTables, SqliteCollectionTables
from app.store.postgres.db import PostgresDb
from app.store.reads import Dialect
from app.store.sqlite.db import BUSY_TIMEOUT_MS, SqliteDb

CONNECT_TIMEOUT_S = 10
_RUN_COLUMNS = (
    "id, task, params, status, created_at, updated_at, result, owner, lease_until,"
    " cancel_requested, tenant, takeovers, thread_id, awaiting, answer,"
    " webhook, delivery"
)


def _utc_iso(record: RunRecord, field: str) -> str:
    # One offset for every row: the runs are ordered by this text.
    value = getattr(record, field)
    return str(value.astimezone(UTC).isoformat())


_LITE = SqliteDb.dialect
_PG = PostgresDb.dialect


def _tables(dialect: Dialect) -> list[tuple[str, str]]:
    """(name, table) of each table `counts` counts."""
    names = ("runs", "events", "threads", "collections", "documents", "passages", "assistants")
    return [(name, getattr(dialect, name)) for name in names]


class SqliteTables:
    """`RunTables` on `runs.sqlite`, through a connection of its own."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self.collections = SqliteCollectionTables(conn)
        self.assistants = SqliteAssistantTables(conn)

    @classmethod
    async def open(cls, path: Path, *, ledger: bool) -> SqliteTables:
        conn = await aiosqlite.connect(path, isolation_level=None)
        await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if ledger:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS migrated (kind TEXT NOT NULL, key TEXT NOT NULL,"
                " source TEXT NOT NULL, PRIMARY KEY (kind, key))"
            )
        return cls(conn)

    async def close(self) -> None:
        await self._conn.close()

    async def run_ids(self, after: str, limit: int) -> list[str]:
        rows = await self._conn.execute_fetchall(
            f"SELECT id FROM {_LITE.runs} WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        )
        return [row[0] for row in rows]

    async def write_run(self, record: RunRecord, events: list[StoredEvent]) -> None:
        row = (
            record.id,
            record.task,
            record.params.model_dump_json(),
            record.status,
            _utc_iso(record, "created_at"),
            _utc_iso(record, "updated_at"),
            record.result.model_dump_json() if record.result is not None else None,
            int(record.cancel_requested),
            record.tenant,
            record.takeovers,
            record.thread_id,
            record.awaiting,
            json.dumps(record.answer) if record.answer is not None else None,
            record.webhook,
            record.delivery.model_dump_json() if record.delivery is not None else None,
        )
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            await self._conn.execute(f"DELETE FROM {_LITE.events} WHERE run_id = ?", (record.id,))
            await self._conn.execute(f"DELETE FROM {_LITE.runs} WHERE id = ?", (record.id,))
            await self._conn.execute(
                f"INSERT INTO {_LITE.runs} ({_RUN_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            await self._conn.executemany(
                f"INSERT INTO {_LITE.events} (run_id, seq, type, data) VALUES (?, ?, ?, ?)",
                [(record.id, e.seq, e.type, e.data) for e in events],
            )
            await self._conn.execute("COMMIT")
        except BaseException:
            await self._conn.execute("ROLLBACK")
            raise

    async def thread_ids(self, after: str, limit: int) -> list[str]:
        rows = await self._conn.execute_fetchall(
            f"SELECT id FROM {_LITE.threads} WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        )
        return [row[0] for row in rows]

    async def write_thread(self, thread: ThreadRecord) -> None:
        await self._conn.execute(
            f"INSERT INTO {_LITE.threads} (id, tenant, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,"
            " created_at = excluded.created_at",
            (thread.id, thread.tenant, thread.created_at.astimezone(UTC).isoformat()),
        )

    async def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, table in _tables(_LITE):
            rows = list(await self._conn.execute_fetchall(f"SELECT count(*) FROM {table}"))
            out[name] = int(rows[0][0])
        return out

    async def ledger(self, kind: str, keys: list[str]) -> dict[str, str]:
        if not keys:
            return {}
        marks = ", ".join("?" for _ in keys)
        rows = await self._conn.execute_fetchall(
            f"SELECT key, source FROM migrated WHERE kind = ? AND key IN ({marks})",
            (kind, *keys),
        )
        return {row[0]: row[1] for row in rows}

    async def mark(self, kind: str, key: str, source: str) -> None:
        await self._conn.execute(
            "INSERT INTO migrated (kind, key, source) VALUES (?, ?, ?)"
            " ON CONFLICT (kind, key) DO UPDATE SET source = excluded.source",
            (kind, key, source),
        )


class PostgresTables:
    """`RunTables` on the `lats_` tables, through a connection of its own."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn
        self.collections = PostgresCollectionTables(conn)
        self.assistants = PostgresAssistantTables(conn)

    @classmethod
    async def connect(cls, url: str) -> PostgresTables:
        """Connected, nothing created (a source is only read): see `has_runs`."""
        conn = await AsyncConnection.connect(
            url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
        )
        return cls(conn)

    async def has_runs(self) -> bool:
        """Whether the database holds a run store (its runs table)."""
        cur = await self._conn.execute("SELECT to_regclass(%s) IS NOT NULL", (_PG.runs,))
        row = await cur.fetchone()
        return bool(row and row[0])

    async def create_ledger(self) -> None:
        await self._conn.execute(
            "CREATE TABLE IF NOT EXISTS lats_migrated (kind TEXT NOT NULL, key TEXT NOT NULL,"
            " source TEXT NOT NULL, PRIMARY KEY (kind, key))"
        )

    async def close(self) -> None:
        await self._conn.close()

    async def run_ids(self, after: str, limit: int) -> list[str]:
        cur = await self._conn.execute(
            # COLLATE "C": the same byte order as SQLite's, whatever the database's collation.
            f'SELECT id FROM {_PG.runs} WHERE id > %s COLLATE "C" ORDER BY id COLLATE "C" LIMIT %s',
            (after, limit),
        )
        return [row[0] for row in await cur.fetchall()]

    async def write_run(self, record: RunRecord, events: list[StoredEvent]) -> None:
        result = Jsonb(record.result.model_dump(mode="json")) if record.result else None
        async with self._conn.transaction():
            await self._conn.execute(f"DELETE FROM {_PG.events} WHERE run_id = %s", (record.id,))
            await self._conn.execute(f"DELETE FROM {_PG.runs} WHERE id = %s", (record.id,))
            await self._conn.execute(
                f"INSERT INTO {_PG.runs} ({_RUN_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, NULL, 'epoch',"
                " %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    record.id,
                    record.task,
                    Jsonb(record.params.model_dump(mode="json")),
                    record.status,
                    record.created_at,
                    record.updated_at,
                    result,
                    record.cancel_requested,
                    record.tenant,
                    record.takeovers,
                    record.thread_id,
                    record.awaiting,
                    Jsonb(record.answer) if record.answer is not None else None,
                    record.webhook,
                    (
                        Jsonb(record.delivery.model_dump(mode="json"))
                        if record.delivery is not None
                        else None
                    ),
                ),
            )
            async with self._conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO {_PG.events} (run_id, seq, type, data) VALUES (%s, %s, %s, %s)",
                    [(record.id, e.seq, e.type, e.data) for e in events],
                )

    async def thread_ids(self, after: str, limit: int) -> list[str]:
        cur = await self._conn.execute(
            f'SELECT id FROM {_PG.threads} WHERE id > %s COLLATE "C"'
            ' ORDER BY id COLLATE "C" LIMIT %s',
            (after, limit),
        )
        return [row[0] for row in await cur.fetchall()]

    async def write_thread(self, thread: ThreadRecord) -> None:
        await self._conn.execute(
            f"INSERT INTO {_PG.threads} (id, tenant, created_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,"
            " created_at = excluded.created_at",
            (thread.id, thread.tenant, thread.created_at),
        )

    async def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, table in _tables(_PG):
            cur = await self._conn.execute(f"SELECT count(*) FROM {table}")
            row = await cur.fetchone()
            out[name] = int(row[0]) if row else 0
        return out

    async def ledger(self, kind: str, keys: list[str]) -> dict[str, str]:
        cur = await self._conn.execute(
            "SELECT key, source FROM lats_migrated WHERE kind = %s AND key = ANY(%s)",
            (kind, keys),
        )
        return {row[0]: row[1] for row in await cur.fetchall()}

    async def mark(self, kind: str, key: str, source: str) -> None:
        await self._conn.execute(
            "INSERT INTO lats_migrated (kind, key, source) VALUES (%s, %s, %s)"
            " ON CONFLICT (kind, key) DO UPDATE SET source = excluded.source",
            (kind, key, source),
        )
