"""The collection tables as `lats migrate` reads and writes them: collection ids in key order,
and a collection read or written whole (its record, its documents, their passages), on the
connection of the side's run tables (app/store/migrate_tables.py).

A collection is written in one transaction, what the target held under its id deleted first,
its passages indexed in the target as any write's are (app/store/passage_index.py): nothing of
the index is copied. Content is kept in an order
both dialects agree on (sorted here, by code point), so that its digest is the same on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Protocol

import aiosqlite
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from app.store.collection_base import CollectionRecord, DocumentRecord
from app.store.collection_reads import DOCUMENT_COLUMNS, collection_record, document_record
from app.store.collection_writes import WriteSql, collection_row, document_row
from app.store.index_sql import IndexSql, Plan, Step, run_steps
from app.store.passage_index import DocumentWords, index_document
from app.store.postgres.collections import COPY_PASSAGES
from app.store.postgres.collections import INDEX as POSTGRES_INDEX
from app.store.postgres.db import PostgresDb, run_plan
from app.store.reads import Dialect, Row
from app.store.sqlite.db import INDEX as SQLITE_INDEX
from app.store.sqlite.db import SqliteDb
from tools.documents.passages import Passage

_PASSAGE_COLUMNS = ("document_id", "page", "number", "heading", "text")
_LITE = WriteSql.of(SQLITE_INDEX)
_PG = WriteSql.of(POSTGRES_INDEX)

# A collection's own row; what it holds is compared as its documents, so its counts are 0 here.
_COLLECTION = (
    "SELECT id, tenant, name, created_at, 0 AS documents, 0 AS bytes FROM {table} WHERE id = ?"
)


@dataclass(frozen=True)
class CollectionContent:
    """One collection whole: its record, its documents by id, and their passages (document
    id, page, number, heading, text) by document, page and number."""

    collection: CollectionRecord
    documents: list[DocumentRecord]
    passages: list[tuple[str, int, int, str | None, str]]

    def fields(self) -> dict[str, Any]:
        """What is compared across the sides (times in UTC: Postgres answers in the session's
        time zone)."""
        utc = {"created_at": self.collection.created_at.astimezone(UTC)}
        return {
            "collection": self.collection.model_copy(update=utc).model_dump(mode="json"),
            "documents": [
                d.model_copy(update={"created_at": d.created_at.astimezone(UTC)}).model_dump(
                    mode="json"
                )
                for d in self.documents
            ],
            "passages": [list(p) for p in self.passages],
        }


def _indexed(content: CollectionContent, sql: IndexSql) -> Plan[None]:
    """The index of a collection's documents, their passages' rows written."""
    by_document: dict[str, list[Passage]] = {}
    for document_id, page, number, heading, text in content.passages:
        by_document.setdefault(document_id, []).append(Passage(page, number, heading, text))
    for document_id, passages in by_document.items():
        words = DocumentWords.of(passages)
        yield from index_document(sql, content.collection.id, document_id, words)


class CollectionTables(Protocol):
    """The bulk side of one store's collection tables."""

    async def ids(self, after: str, limit: int) -> list[str]:
        """Up to `limit` collection ids greater than `after`, in order."""

    async def read(self, key: str) -> CollectionContent | None:
        """The collection `key` whole, or None."""

    async def write(self, content: CollectionContent) -> None:
        """Replace the collection `content.collection.id` by this one, in one transaction."""


class _Reads(ABC):
    """A collection read whole, in either dialect's tables (`dialect`), through its `_dicts`."""

    dialect: Dialect

    @abstractmethod
    async def _dicts(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The rows of `sql` (written with `?` placeholders) as dicts."""

    async def read(self, key: str) -> CollectionContent | None:
        names = self.dialect
        found = await self._dicts(_COLLECTION.format(table=names.collections), (key,))
        if not found:
            return None
        documents = await self._dicts(
            f"SELECT {DOCUMENT_COLUMNS} FROM {names.documents} d WHERE d.collection_id = ?",
            (key,),
        )
        passages = await self._dicts(
            f"SELECT {', '.join(_PASSAGE_COLUMNS)} FROM {names.passages} WHERE collection_id = ?",
            (key,),
        )
        rows = sorted(
            (r["document_id"], int(r["page"]), int(r["number"]), r["heading"], r["text"])
            for r in passages
        )
        records = sorted((document_record(d) for d in documents), key=lambda d: d.id)
        return CollectionContent(collection_record(found[0]), records, rows)


class SqliteCollectionTables(_Reads):
    """`CollectionTables` on `runs.sqlite`, on the run tables' connection."""

    dialect = SqliteDb.dialect

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def _dicts(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self._conn.execute(sql, args) as cur:
            names = [c[0] for c in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in await cur.fetchall()]

    async def _run(self, step: Step) -> Sequence[Row]:
        if step.rows is not None:
            await self._conn.executemany(step.sql, step.rows)
            return []
        return await self._dicts(step.sql, step.args)

    async def ids(self, after: str, limit: int) -> list[str]:
        rows = await self._conn.execute_fetchall(
            "SELECT id FROM collections WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        )
        return [row[0] for row in rows]

    async def write(self, content: CollectionContent) -> None:
        c = content.collection
        key = c.id
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            for sql in _LITE.delete_collection:
                await self._conn.execute(sql, (key,))
            utc = c.created_at.astimezone(UTC).isoformat()
            await self._conn.execute(_LITE.insert_collection, collection_row(c, utc))
            await self._conn.executemany(
                _LITE.insert_document,
                [
                    document_row(d, d.created_at.astimezone(UTC).isoformat())
                    for d in content.documents
                ],
            )
            await self._conn.executemany(
                _LITE.insert_passage, [(p[0], key, *p[1:]) for p in content.passages]
            )
            await run_steps(_indexed(content, SQLITE_INDEX), self._run)
            await self._conn.execute("COMMIT")
        except BaseException:
            await self._conn.execute("ROLLBACK")
            raise


class PostgresCollectionTables(_Reads):
    """`CollectionTables` on the `lats_` tables, on the run tables' connection."""

    dialect = PostgresDb.dialect

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def _dicts(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self._conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.replace("?", "%s"), args)
            return await cur.fetchall()

    async def ids(self, after: str, limit: int) -> list[str]:
        # COLLATE "C": the same byte order as SQLite's, whatever the database's collation.
        rows = await self._dicts(
            'SELECT id FROM lats_collections WHERE id > ? COLLATE "C"'
            ' ORDER BY id COLLATE "C" LIMIT ?',
            (after, limit),
        )
        return [row["id"] for row in rows]

    async def write(self, content: CollectionContent) -> None:
        c = content.collection
        key = c.id
        async with self._conn.transaction():
            for sql in _PG.delete_collection:
                await self._conn.execute(sql, (key,))
            await self._conn.execute(_PG.insert_collection, collection_row(c, c.created_at))
            async with self._conn.cursor() as cur:
                await cur.executemany(
                    _PG.insert_document, [document_row(d, d.created_at) for d in content.documents]
                )
            async with self._conn.cursor() as cur, cur.copy(COPY_PASSAGES) as copy:
                for p in content.passages:
                    await copy.write_row((p[0], key, *p[1:]))
            await run_plan(self._conn, _indexed(content, POSTGRES_INDEX))
