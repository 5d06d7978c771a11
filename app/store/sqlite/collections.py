"""Collections on SQLite: each write (a collection, a document with all its passages and their
index, a deletion) is one function of the writer's connection, so it commits whole with its
batch or not at all (a process killed mid-way leaves nothing of it); the single writer makes a
check and the write after it one atomic step (a name's uniqueness, a tenant's bytes, a run's
use). A search's steps (app/store/passage_index.py) run on a searching connection of their own,
in one trip to its thread."""

from __future__ import annotations

import sqlite3
from typing import Any

from app.store.collection_base import (
    RUN_COLLECTIONS,
    CollectionInUse,
    CollectionNotFound,
    CollectionRecord,
)
from app.store.collection_writes import (
    CollectionStore,
    DocumentWrite,
    WriteSql,
    collection_row,
    document_row,
)
from app.store.passage_index import SearchQuery, unindex_document
from app.store.reads import Row
from app.store.sqlite.db import INDEX, OPEN, SqliteDb, row, run_plan

_SQL = WriteSql.of(INDEX)
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    f"SELECT 1 FROM runs, json_each(runs.params, '$.{RUN_COLLECTIONS}') AS used"
    f" WHERE runs.{OPEN} AND used.value = ? LIMIT 1"
)
_DOCUMENT = "SELECT 1 FROM documents WHERE id = ? AND collection_id = ?"


class SqliteCollections(CollectionStore[SqliteDb]):
    """`Collections` on SQLite."""

    _index = INDEX

    async def _insert(self, collection: CollectionRecord) -> bool:
        values = collection_row(collection, collection.created_at.isoformat())

        def write(conn: sqlite3.Connection) -> bool:
            try:
                conn.execute(_SQL.insert_collection, values)
            except sqlite3.IntegrityError:
                return False  # the unique name
            return True

        return await self._db.write(write, "new")

    async def delete(self, tenant: str | None, collection_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, _SQL.mine, (collection_id, tenant)) is None:
                return False
            if row(conn, _IN_USE, (collection_id,)) is not None:
                raise CollectionInUse()
            for sql in _SQL.delete_collection:
                conn.execute(sql, (collection_id,))
            return True

        return await self._db.write(write)

    async def _add(self, tenant: str | None, document: DocumentWrite) -> Row | None:
        record = document.record
        values = document_row(record, record.created_at.isoformat())

        def write(conn: sqlite3.Connection) -> Row | None:
            if row(conn, _SQL.mine, (record.collection_id, tenant)) is None:
                raise CollectionNotFound()
            same = row(conn, _SQL.same_content, (record.collection_id, record.sha256))
            if same is not None:
                return same
            used = row(conn, _SQL.used_bytes, (tenant,))
            self._check_room(int(used["n"]) if used else 0, record)
            conn.execute(_SQL.insert_document, values)
            conn.executemany(_SQL.insert_passage, document.passages)
            run_plan(conn, document.index(self._index))
            return None

        return await self._db.write(write, "new")

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, _SQL.mine, (collection_id, tenant)) is None:
                return False
            if row(conn, _DOCUMENT, (document_id, collection_id)) is None:
                return False
            run_plan(conn, unindex_document(self._index, document_id))
            conn.execute("DELETE FROM passages WHERE document_id = ?", (document_id,))
            conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            return True

        return await self._db.write(write)

    async def _search(self, query: SearchQuery) -> list[dict[str, Any]]:
        return await self._db.search(query)
