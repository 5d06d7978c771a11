"""A tenant's assistants on SQLite: each write one function of the writer's connection."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from app.store.assistant_base import (
    AssistantReads,
    AssistantRecord,
    delete_sql,
    insert_sql,
    insert_values,
    update_sql,
    update_values,
)
from app.store.sqlite.db import SqliteDb

_INSERT = insert_sql(SqliteDb.dialect)
_UPDATE = update_sql(SqliteDb.dialect)
_DELETE = delete_sql(SqliteDb.dialect)


class SqliteAssistants(AssistantReads[SqliteDb]):
    """`Assistants` on SQLite."""

    async def create(self, assistant: AssistantRecord) -> bool:
        values = insert_values(assistant, json.dumps, datetime.isoformat)

        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute(_INSERT, values).rowcount == 1

        return await self._db.write(write, "new")

    async def update(self, assistant: AssistantRecord) -> bool:
        values = update_values(assistant, json.dumps, datetime.isoformat)

        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute(_UPDATE, values).rowcount == 1

        return await self._db.write(write)

    async def delete(self, tenant: str | None, assistant_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute(_DELETE, (tenant, assistant_id)).rowcount == 1

        return await self._db.write(write)
