"""What the store keeps of a tenant's assistants (the Agent Server API's `/lg/assistants`): run
parameters saved under an id, with a name, a description and metadata; and the reads, the
statements and the writes both dialects share (`AssistantStore`). The interface is `Assistants`
in app/store/protocols.py.

An assistant belongs to one tenant, and its id is that tenant's own: two tenants may each have
an assistant `research`, and another tenant's id finds nothing, whether it is read, listed,
updated or deleted. Its parameters are stored as the service validated them and never read by
the store: a collection they name may be deleted since (a run started from the assistant is then
refused like any run that names an unknown collection).

An update is fenced by the version it was computed from: it lands only while the stored version
is still that one (`Assistants.update`), so two concurrent updates never lose one another's
change silently.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from app.store.reads import DbT, Dialect, Part, Row, moment, row_record

COLUMNS = "id, tenant, name, description, params, metadata, version, created_at, updated_at"


class AssistantRecord(BaseModel):
    """One assistant as stored."""

    id: str = Field(description="Unique among its tenant's assistants.")
    tenant: str | None = Field(
        default=None, description="The name of the API key that made it; None without keys."
    )
    name: str
    description: str | None = None
    params: dict[str, Any] = Field(
        default_factory=dict, description="The run parameters it presets (only those given)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int = Field(default=1, description="1 when made, one more at each update.")
    created_at: datetime
    updated_at: datetime


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def assistant_record(row: Row) -> AssistantRecord:
    """A row of the assistants table (SQLite keeps JSON and times as text; psycopg decodes
    both)."""
    return row_record(
        AssistantRecord,
        row,
        params=_json(row["params"]),
        metadata=_json(row["metadata"]),
        created_at=moment(row["created_at"]),
        updated_at=moment(row["updated_at"]),
    )


Encode = Callable[[Any], Any]
"""How a dialect's driver is handed a JSON column, or a time (SQLite: text; psycopg: as is)."""


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class Encoding:
    """How a dialect's driver is handed a JSON column (`json_of`) and a time (`time_of`)."""

    json_of: Encode
    time_of: Encode = _same


def insert_values(a: AssistantRecord, json_of: Encode, time_of: Encode = _same) -> tuple[Any, ...]:
    """`insert_sql`'s values (`COLUMNS`, in order), encoded for a dialect."""
    return (
        a.id,
        a.tenant,
        a.name,
        a.description,
        json_of(a.params),
        json_of(a.metadata),
        a.version,
        time_of(a.created_at),
        time_of(a.updated_at),
    )


def update_values(a: AssistantRecord, json_of: Encode, time_of: Encode = _same) -> tuple[Any, ...]:
    """`update_sql`'s values: the new fields, then the assistant and the version it replaces."""
    return (
        a.name,
        a.description,
        json_of(a.params),
        json_of(a.metadata),
        a.version,
        time_of(a.updated_at),
        a.tenant,
        a.id,
        a.version - 1,
    )


def insert_sql(dialect: Dialect) -> str:
    """A new assistant, unless its tenant has one of that id (then no row is written)."""
    return (
        f"INSERT INTO {dialect.assistants} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING"
    )


def update_sql(dialect: Dialect) -> str:
    """The assistant's fields, only while its stored version is the one the change read."""
    return (
        f"UPDATE {dialect.assistants} SET name = ?, description = ?, params = ?, metadata = ?,"
        f" version = ?, updated_at = ? WHERE tenant {dialect.same} ? AND id = ? AND version = ?"
    )


def delete_sql(dialect: Dialect) -> str:
    return f"DELETE FROM {dialect.assistants} WHERE tenant {dialect.same} ? AND id = ?"


class Assistants(Protocol):
    """A tenant's assistants: run parameters saved under an id. Every method names the tenant
    (None: the service without keys); another tenant's assistant is none to it."""

    async def create(self, assistant: AssistantRecord) -> bool:
        """Store a new assistant; False (nothing stored) when its tenant has one of that id."""

    async def get(self, tenant: str | None, assistant_id: str) -> AssistantRecord | None: ...

    async def page(self, tenant: str | None, *, limit: int, offset: int) -> list[AssistantRecord]:
        """A page of the tenant's assistants, newest first."""

    async def update(self, assistant: AssistantRecord) -> bool:
        """Replace the stored assistant (its tenant's, of its id) by `assistant`, whose
        `version` is one more than the stored one's; False (nothing written) when there is
        no such assistant or its stored version is not `assistant.version - 1` (another
        update came first)."""

    async def delete(self, tenant: str | None, assistant_id: str) -> bool:
        """False when there is no such assistant."""


class AssistantReads(Part[DbT]):
    """`Assistants`' reads."""

    async def get(self, tenant: str | None, assistant_id: str) -> AssistantRecord | None:
        dialect = self._db.dialect
        row = await self._db.one(
            f"SELECT {COLUMNS} FROM {dialect.assistants} WHERE tenant {dialect.same} ? AND id = ?",
            (tenant, assistant_id),
        )
        return None if row is None else assistant_record(row)

    async def page(self, tenant: str | None, *, limit: int, offset: int) -> list[AssistantRecord]:
        dialect = self._db.dialect
        rows = await self._db.all(
            f"SELECT {COLUMNS} FROM {dialect.assistants} WHERE tenant {dialect.same} ?"
            " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
            (tenant, limit, offset),
        )
        return [assistant_record(r) for r in rows]


class AssistantStore(AssistantReads[DbT], ABC):
    """`Assistants` but how a dialect makes one write: the statements, their values (encoded
    as the dialect's `encoding` says) and what a write answers are the same."""

    encoding: Encoding

    async def create(self, assistant: AssistantRecord) -> bool:
        values = insert_values(assistant, self.encoding.json_of, self.encoding.time_of)
        return await self._one_row(insert_sql(self._db.dialect), values, new=True)

    async def update(self, assistant: AssistantRecord) -> bool:
        values = update_values(assistant, self.encoding.json_of, self.encoding.time_of)
        return await self._one_row(update_sql(self._db.dialect), values)

    async def delete(self, tenant: str | None, assistant_id: str) -> bool:
        return await self._one_row(delete_sql(self._db.dialect), (tenant, assistant_id))

    @abstractmethod
    async def _one_row(self, sql: str, values: tuple[Any, ...], *, new: bool = False) -> bool:
        """The write `sql` (written with `?` placeholders) of `values`, a transaction of its
        own; whether it wrote one row. `new`: it stores something new (on a full disk such a
        write is the first refused)."""
