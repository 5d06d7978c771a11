"""A tenant's assistants on SQLite: each write one function of the writer's connection."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from app.store.assistant_base import AssistantStore, Encoding
from app.store.sqlite.db import SqliteDb


class SqliteAssistants(AssistantStore[SqliteDb]):
    """`Assistants` on SQLite."""

    encoding = Encoding(json_of=json.dumps, time_of=datetime.isoformat)

    async def _one_row(self, sql: str, values: tuple[Any, ...], *, new: bool = False) -> bool:
        return await self._db.write(
            lambda conn: conn.execute(sql, values).rowcount == 1, "new" if new else "other"
        )
