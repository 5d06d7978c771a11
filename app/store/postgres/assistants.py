"""A tenant's assistants on Postgres: each write one statement."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from app.store.assistant_base import (
    AssistantReads,
    AssistantRecord,
    delete_sql,
    insert_sql,
    insert_values,
    update_sql,
    update_values,
)
from app.store.postgres.db import PostgresDb

_INSERT = insert_sql(PostgresDb.dialect).replace("?", "%s")
_UPDATE = update_sql(PostgresDb.dialect).replace("?", "%s")
_DELETE = delete_sql(PostgresDb.dialect).replace("?", "%s")


class PostgresAssistants(AssistantReads[PostgresDb]):
    """`Assistants` on Postgres."""

    async def create(self, assistant: AssistantRecord) -> bool:
        values = insert_values(assistant, Jsonb)
        async with self._db.connection() as conn:
            cur = await conn.execute(_INSERT, values)
            return cur.rowcount == 1

    async def update(self, assistant: AssistantRecord) -> bool:
        values = update_values(assistant, Jsonb)
        async with self._db.connection() as conn:
            cur = await conn.execute(_UPDATE, values)
            return cur.rowcount == 1

    async def delete(self, tenant: str | None, assistant_id: str) -> bool:
        async with self._db.connection() as conn:
            cur = await conn.execute(_DELETE, (tenant, assistant_id))
            return cur.rowcount == 1
