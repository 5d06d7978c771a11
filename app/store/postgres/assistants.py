"""A tenant's assistants on Postgres: each write one statement."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from app.store.assistant_base import AssistantStore, Encoding
from app.store.postgres.db import PostgresDb


class PostgresAssistants(AssistantStore[PostgresDb]):
    """`Assistants` on Postgres."""

    encoding = Encoding(json_of=Jsonb)

    async def _one_row(self, sql: str, values: tuple[Any, ...], *, new: bool = False) -> bool:
        async with self._db.connection() as conn:
            cur = await conn.execute(sql.replace("?", "%s"), values)
            return cur.rowcount == 1
