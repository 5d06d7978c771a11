"""The run store's reads, written once for both backends: the SQL is the same but for table
names and a few spellings, which each backend declares (`Dialect`); each runs a statement
(`_one`, `_all`, written with `?` placeholders) and turns a row into a record (`_record`) its
own way."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from agents.steering import SteerCommand
from app.store.base import UNFINISHED, RunRecord, RunStatus, StoredEvent, ThreadRecord

# Literal, so that neither dialect needs a parameter for it.
OPEN_SQL = "status IN ({})".format(", ".join(f"'{status}'" for status in UNFINISHED))


class Row(Protocol):
    """A result row read by column name (sqlite3.Row, or psycopg's dict rows)."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the backends' reads."""

    runs: str  # the runs table
    events: str  # the events table
    threads: str  # the threads table
    commands: str  # the steering commands table
    same: str  # null-safe equality ("IS" or "IS NOT DISTINCT FROM")
    no_limit: int | None  # a LIMIT that limits nothing


class RunReads(ABC):
    """The `RunStore` reads, on a backend's `_one` and `_all`."""

    dialect: Dialect

    @abstractmethod
    async def _one(self, sql: str, args: tuple[Any, ...]) -> Row | None:
        """The first row of `sql` (written with `?` placeholders), or None."""

    @abstractmethod
    async def _all(self, sql: str, args: tuple[Any, ...]) -> Sequence[Row]:
        """Every row of `sql` (written with `?` placeholders)."""

    @abstractmethod
    def _record(self, row: Row) -> RunRecord: ...

    async def _count(self, sql: str, args: tuple[Any, ...]) -> int:
        row = await self._one(sql, args)
        return int(row["n"]) if row else 0

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self._one(f"SELECT * FROM {self.dialect.runs} WHERE id = ?", (run_id,))
        return self._record(row) if row else None

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        filters = (("status", status), ("tenant", tenant))
        given = [(name, value) for name, value in filters if value is not None]
        where = " AND ".join(f"{name} = ?" for name, _ in given)
        sql = f"SELECT * FROM {self.dialect.runs}" + (f" WHERE {where}" if where else "")
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        rows = await self._all(sql, (*(value for _, value in given), limit, offset))
        return [self._record(r) for r in rows]

    async def count_open(self, tenant: str | None) -> int:
        sql = f"SELECT COUNT(*) AS n FROM {self.dialect.runs} WHERE tenant {self.dialect.same} ?"
        return await self._count(f"{sql} AND {OPEN_SQL}", (tenant,))

    async def events_after(
        self, run_id: str, after: int, limit: int | None = None
    ) -> list[StoredEvent]:
        rows = await self._all(
            f"SELECT seq, type, data FROM {self.dialect.events} WHERE run_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (run_id, after, self.dialect.no_limit if limit is None else limit),
        )
        return [StoredEvent(seq=r["seq"], type=r["type"], data=r["data"]) for r in rows]

    async def last_seq(self, run_id: str) -> int:
        sql = f"SELECT COALESCE(MAX(seq), 0) AS n FROM {self.dialect.events} WHERE run_id = ?"
        return await self._count(sql, (run_id,))

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self._one(
            f"SELECT id, tenant, created_at FROM {self.dialect.threads} WHERE id = ?", (thread_id,)
        )
        return None if row is None else _thread(row)

    async def list_threads(
        self, *, limit: int, offset: int, tenant: str | None = None
    ) -> list[ThreadRecord]:
        sql = f"SELECT id, tenant, created_at FROM {self.dialect.threads}"
        args: tuple[Any, ...] = (limit, offset)
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant, *args)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        return [_thread(r) for r in await self._all(sql, args)]

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        rows = await self._all(
            f"SELECT * FROM {self.dialect.runs} WHERE thread_id = ? ORDER BY created_at, id",
            (thread_id,),
        )
        return [self._record(r) for r in rows]

    async def commands_after(self, run_id: str, after: int) -> list[SteerCommand]:
        rows = await self._all(
            f"SELECT id, command, node_id, step, sent_by FROM {self.dialect.commands}"
            " WHERE run_id = ? AND id > ? ORDER BY id",
            (run_id, after),
        )
        return [
            SteerCommand(
                id=r["id"],
                command=r["command"],
                node_id=r["node_id"],
                step=r["step"],
                by=r["sent_by"],
            )
            for r in rows
        ]

    async def ping(self) -> None:
        await self._one("SELECT 1 AS n", ())


def run_record(row: Row, **decoded: Any) -> RunRecord:
    """The record a runs row holds: each field is its column's value, or, for a column the
    backend stores encoded, the decoded value given by name."""
    values = {name: row[name] for name in RunRecord.model_fields if name not in decoded}
    return RunRecord.model_validate(values | decoded)


def _thread(row: Row) -> ThreadRecord:
    created = row["created_at"]
    return ThreadRecord(
        id=row["id"],
        tenant=row["tenant"],
        created_at=created if isinstance(created, datetime) else datetime.fromisoformat(created),
    )
