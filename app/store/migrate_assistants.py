"""The assistants table as `lats migrate` reads and writes it, on the connection of the side's run
tables (app/store/migrate_tables.py): every tenant's assistants in key order, and one read or
written whole.

An assistant's id is its tenant's own, so a unit's key names both: `["<tenant>", "<id>"]` as
JSON (`null` for the service without keys). Keys are listed by tenant, then id, in byte order
on both dialects. Times are read back in UTC, so that a unit's digest is the same on both sides.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Protocol

import aiosqlite
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from app.store.assistant_base import COLUMNS, AssistantRecord, assistant_record, insert_values
from app.store.postgres.db import PostgresDb
from app.store.sqlite.db import SqliteDb

_LITE = SqliteDb.dialect.assistants
_PG = PostgresDb.dialect.assistants
# The replacing write: what the target held under the key is overwritten.
_UPSERT = (
    " ON CONFLICT ((COALESCE(tenant, '')), id) DO UPDATE SET name = excluded.name,"
    " description = excluded.description, params = excluded.params,"
    " metadata = excluded.metadata, version = excluded.version,"
    " created_at = excluded.created_at, updated_at = excluded.updated_at"
)


def _parts(key: str) -> tuple[str | None, str]:
    tenant, assistant_id = json.loads(key)
    return tenant, assistant_id


def _after(key: str) -> tuple[str, str]:
    """Where a listing after `key` starts: its tenant (None as '') and id; '' for the start."""
    if not key:
        return "", ""
    tenant, assistant_id = _parts(key)
    return tenant or "", assistant_id


def _utc(record: AssistantRecord) -> AssistantRecord:
    return record.model_copy(
        update={
            "created_at": record.created_at.astimezone(UTC),
            "updated_at": record.updated_at.astimezone(UTC),
        }
    )


class AssistantTables(Protocol):
    """The bulk side of one store's assistants table."""

    async def keys(self, after: str, limit: int) -> list[str]:
        """Up to `limit` unit keys greater than `after`, in order."""

    async def read(self, key: str) -> AssistantRecord | None:
        """The assistant of the unit key `key` (its times in UTC), or None."""

    async def write(self, record: AssistantRecord) -> None:
        """Replace what the table holds under the record's tenant and id by it."""


class SqliteAssistantTables:
    """`AssistantTables` on `runs.sqlite`, on the run tables' connection."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def keys(self, after: str, limit: int) -> list[str]:
        rows = await self._conn.execute_fetchall(
            f"SELECT tenant, id FROM {_LITE} WHERE (IFNULL(tenant, ''), id) > (?, ?)"
            " ORDER BY IFNULL(tenant, ''), id LIMIT ?",
            (*_after(after), limit),
        )
        return [json.dumps([row[0], row[1]]) for row in rows]

    async def read(self, key: str) -> AssistantRecord | None:
        async with self._conn.execute(
            f"SELECT {COLUMNS} FROM {_LITE} WHERE tenant IS ? AND id = ?", _parts(key)
        ) as cur:
            names = [c[0] for c in cur.description]
            row = await cur.fetchone()
        return None if row is None else _utc(assistant_record(dict(zip(names, row, strict=True))))

    async def write(self, record: AssistantRecord) -> None:
        r = _utc(record)
        await self._conn.execute(
            f"INSERT INTO {_LITE} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            + _UPSERT.replace("COALESCE", "IFNULL"),
            insert_values(r, json.dumps, datetime.isoformat),
        )


class PostgresAssistantTables:
    """`AssistantTables` on `lats_assistants`, on the run tables' connection."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def keys(self, after: str, limit: int) -> list[str]:
        # COLLATE "C": the same byte order as SQLite's, whatever the database's collation.
        order = 'COALESCE(tenant, \'\') COLLATE "C", id COLLATE "C"'
        cur = await self._conn.execute(
            f"SELECT tenant, id FROM {_PG} WHERE ({order}) > (%s, %s) ORDER BY {order} LIMIT %s",
            (*_after(after), limit),
        )
        return [json.dumps([row[0], row[1]]) for row in await cur.fetchall()]

    async def read(self, key: str) -> AssistantRecord | None:
        async with self._conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"SELECT {COLUMNS} FROM {_PG} WHERE tenant IS NOT DISTINCT FROM %s AND id = %s",
                _parts(key),
            )
            row = await cur.fetchone()
        return None if row is None else _utc(assistant_record(row))

    async def write(self, record: AssistantRecord) -> None:
        r = record
        await self._conn.execute(
            f"INSERT INTO {_PG} ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)" + _UPSERT,
            insert_values(r, Jsonb),
        )
