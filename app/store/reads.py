"""The store's reads, written once for both dialects, with the row mapping they share: the SQL
is the same but for table names and a few spellings, which each dialect declares (`Dialect`);
each runs a statement (written with `?` placeholders) and turns a runs row into a record its own
way (`Reader`). A dialect's part of the store (a `Part`, on the dialect's connections) extends
the reads of its concern (`RunReads`, `EventReads`, `ThreadReads`, `CommandReads`) with its
writes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from agents.params import RunParams
from agents.steering import SteerCommand
from app.store.base import UNFINISHED, Held, RunRecord, RunStatus, StoredEvent, ThreadRecord

# Literal, so that neither dialect needs a parameter for it.
OPEN_SQL = "status IN ({})".format(", ".join(f"'{status}'" for status in UNFINISHED))


class Row(Protocol):
    """A result row read by column name (sqlite3.Row, or psycopg's dict rows)."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the dialects' reads."""

    runs: str  # the runs table
    events: str  # the events table
    threads: str  # the threads table
    commands: str  # the steering commands table
    collections: str  # a tenant's document collections
    documents: str  # the documents of collections
    passages: str  # the documents' passages
    assistants: str  # a tenant's assistants (run parameters under an id)
    index_sizes: str  # the full-text index (app/store/passage_index.py): collections' sizes,
    index_words: str  # their words,
    index_postings: str  # each word's passages,
    index_fresh: str  # those written since the last merge,
    index_passages: str  # and each passage's words
    same: str  # null-safe equality ("IS" or "IS NOT DISTINCT FROM")
    no_limit: int | None  # a LIMIT that limits nothing

    @classmethod
    def named(cls, prefix: str, *, same: str, no_limit: int | None) -> Dialect:
        """The dialect whose tables are named for their concern after `prefix`: every field
        but the two spellings is a table, named `prefix` and the field's name."""
        tables: dict[str, Any] = {
            f.name: f"{prefix}{f.name}" for f in fields(cls) if f.name not in ("same", "no_limit")
        }
        return cls(**tables, same=same, no_limit=no_limit)


class Reader(Protocol):
    """How a dialect reads: its spellings, a statement's rows, a runs row as a record."""

    @property
    def dialect(self) -> Dialect: ...

    async def one(self, sql: str, args: tuple[Any, ...]) -> Row | None:
        """The first row of `sql` (written with `?` placeholders), or None."""

    async def all(self, sql: str, args: tuple[Any, ...]) -> Sequence[Row]:
        """Every row of `sql` (written with `?` placeholders)."""

    def record(self, row: Row) -> RunRecord: ...


DbT = TypeVar("DbT", bound=Reader)


class Part(Generic[DbT]):
    """One concern's part of a dialect's store, on that dialect's connections."""

    def __init__(self, db: DbT) -> None:
        self._db = db


async def count(db: Reader, sql: str, args: tuple[Any, ...]) -> int:
    """The `n` column of the first row of `sql`; 0 without a row."""
    row = await db.one(sql, args)
    return int(row["n"]) if row else 0


class RunReads(Part[DbT]):
    """`RunRecords`' reads."""

    async def get(self, run_id: str) -> RunRecord | None:
        row = await self._db.one(f"SELECT * FROM {self._db.dialect.runs} WHERE id = ?", (run_id,))
        return self._db.record(row) if row else None

    async def page(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        filters = (("status", status), ("tenant", tenant))
        given = [(name, value) for name, value in filters if value is not None]
        where = " AND ".join(f"{name} = ?" for name, _ in given)
        sql = f"SELECT * FROM {self._db.dialect.runs}" + (f" WHERE {where}" if where else "")
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        rows = await self._db.all(sql, (*(value for _, value in given), limit, offset))
        return [self._db.record(r) for r in rows]

    async def count_open(self, tenant: str | None) -> int:
        dialect = self._db.dialect
        sql = f"SELECT COUNT(*) AS n FROM {dialect.runs} WHERE tenant {dialect.same} ?"
        return await count(self._db, f"{sql} AND {OPEN_SQL}", (tenant,))


class EventReads(Part[DbT]):
    """`EventLog`'s reads."""

    async def after(self, run_id: str, after: int, limit: int | None = None) -> list[StoredEvent]:
        dialect = self._db.dialect
        rows = await self._db.all(
            f"SELECT seq, type, data FROM {dialect.events} WHERE run_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (run_id, after, dialect.no_limit if limit is None else limit),
        )
        return [StoredEvent(seq=r["seq"], type=r["type"], data=r["data"]) for r in rows]

    async def last_seq(self, run_id: str) -> int:
        sql = f"SELECT COALESCE(MAX(seq), 0) AS n FROM {self._db.dialect.events} WHERE run_id = ?"
        return await count(self._db, sql, (run_id,))


class ThreadReads(Part[DbT]):
    """`Threads`' reads."""

    async def get(self, thread_id: str) -> ThreadRecord | None:
        row = await self._db.one(
            f"SELECT id, tenant, created_at FROM {self._db.dialect.threads} WHERE id = ?",
            (thread_id,),
        )
        return None if row is None else _thread(row)

    async def page(
        self, *, limit: int, offset: int, tenant: str | None = None
    ) -> list[ThreadRecord]:
        sql = f"SELECT id, tenant, created_at FROM {self._db.dialect.threads}"
        args: tuple[Any, ...] = (limit, offset)
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant, *args)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        return [_thread(r) for r in await self._db.all(sql, args)]

    async def runs(self, thread_id: str) -> list[RunRecord]:
        rows = await self._db.all(
            f"SELECT * FROM {self._db.dialect.runs} WHERE thread_id = ? ORDER BY created_at, id",
            (thread_id,),
        )
        return [self._db.record(r) for r in rows]


class CommandReads(Part[DbT]):
    """`Commands`' reads."""

    async def after(self, run_id: str, after: int) -> list[SteerCommand]:
        rows = await self._db.all(
            f"SELECT id, command, node_id, step, sent_by FROM {self._db.dialect.commands}"
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


M = TypeVar("M", bound=BaseModel)


def row_record(
    model: type[M], row: Row, names: Iterable[str] | None = None, /, **decoded: Any
) -> M:
    """The `model` record a row holds: each of `names` (the model's fields when not given) is
    its column's value, or, for a column the dialect stores encoded, the decoded value given
    by name."""
    names = model.model_fields if names is None else names
    values = {name: row[name] for name in names if name not in decoded}
    return model.model_validate(values | decoded)


def moment(value: Any) -> datetime:
    """A time column's value: Postgres answers with datetimes, SQLite with the ISO text it was
    given."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def run_record(row: Row, **decoded: Any) -> RunRecord:
    """The record a runs row holds (`row_record`). The stored parameters are read back into
    `RunParams` once, without any a later version no longer has (a run stored then stays
    readable)."""
    params = decoded["params"] if "params" in decoded else row["params"]
    if isinstance(params, dict):
        decoded["params"] = {k: v for k, v in params.items() if k in RunParams.model_fields}
    return row_record(RunRecord, row, **decoded)


def held(row: Row) -> Held:
    """A renewed lease's row (`id`, `cancel_requested`) as `Held`."""
    return Held(run_id=row["id"], cancel_requested=bool(row["cancel_requested"]))


def _thread(row: Row) -> ThreadRecord:
    return row_record(ThreadRecord, row, created_at=moment(row["created_at"]))
