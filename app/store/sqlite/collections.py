"""Collections on SQLite: each write (a collection, a document with all its passages, a
deletion) is one function of the writer's connection, so it commits whole with its batch or
not at all (a process killed mid-way leaves nothing of it); the single writer makes a check and
the write after it one atomic step (a name's uniqueness, a tenant's bytes, a run's use).

Search is FTS5's (app/store/sqlite/schema.py): the passages holding any of the query's words
(app/store/query_words.py), ranked by FTS5's `bm25()`; the score given is its negation, so
higher is better. Its statistics (document frequencies, average length) are the whole index's,
every tenant's passages together; only the passages found are limited to the tenant's."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from app.store.collection_base import (
    MAX_SEARCH_K,
    RUN_COLLECTIONS,
    AddedDocument,
    CollectionInUse,
    CollectionLimits,
    CollectionNameTaken,
    CollectionNotFound,
    CollectionRecord,
    NewDocument,
    PassageHit,
    check_document,
    over_quota,
)
from app.store.collection_reads import (
    DOCUMENT_COLUMNS,
    CollectionReads,
    document_record,
    passage_hit,
)
from app.store.query_words import fts5_match, query_terms
from app.store.sqlite.db import OPEN, SqliteDb, marks, row

_MINE = "SELECT 1 FROM collections WHERE id = ? AND tenant IS ?"
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    f"SELECT 1 FROM runs, json_each(runs.params, '$.{RUN_COLLECTIONS}') AS used"
    f" WHERE runs.{OPEN} AND used.value = ? LIMIT 1"
)
_USED_BYTES = (
    "SELECT COALESCE(SUM(d.bytes), 0) AS n FROM documents d"
    " JOIN collections c ON c.id = d.collection_id WHERE c.tenant IS ?"
)
_SEARCH = """
SELECT p.collection_id, p.document_id, p.page, p.number, p.text, d.title,
    -bm25(passages_fts) AS score
FROM passages_fts
JOIN passages p ON p.id = passages_fts.rowid
JOIN documents d ON d.id = p.document_id
WHERE passages_fts MATCH ?
  AND p.collection_id IN (SELECT id FROM collections WHERE id IN ({ids}) AND tenant IS ?)
ORDER BY bm25(passages_fts), p.id
LIMIT ?
"""


class SqliteCollections(CollectionReads[SqliteDb]):
    """`Collections` on SQLite."""

    def __init__(self, db: SqliteDb, limits: CollectionLimits | None = None) -> None:
        super().__init__(db)
        self._limits = limits or CollectionLimits()

    async def create(self, collection: CollectionRecord) -> None:
        values = (
            collection.id,
            collection.tenant,
            collection.name,
            collection.created_at.isoformat(),
        )

        def write(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO collections (id, tenant, name, created_at) VALUES (?, ?, ?, ?)",
                    values,
                )
            except sqlite3.IntegrityError as e:
                raise CollectionNameTaken(collection.name) from e

        await self._db.write(write, "new")

    async def delete(self, tenant: str | None, collection_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, _MINE, (collection_id, tenant)) is None:
                return False
            if row(conn, _IN_USE, (collection_id,)) is not None:
                raise CollectionInUse()
            conn.execute("DELETE FROM passages WHERE collection_id = ?", (collection_id,))
            conn.execute("DELETE FROM documents WHERE collection_id = ?", (collection_id,))
            conn.execute("DELETE FROM collections WHERE id = ?", (collection_id,))
            return True

        return await self._db.write(write)

    async def add_document(self, tenant: str | None, document: NewDocument) -> AddedDocument:
        check_document(document, self._limits)
        record = document.record()
        values = (
            record.id,
            record.collection_id,
            record.title,
            record.name,
            record.kind,
            record.sha256,
            record.bytes,
            record.pages,
            record.passages,
            record.created_at.isoformat(),
        )
        passages = [
            (record.id, record.collection_id, p.page or 0, p.number, p.heading, p.text)
            for p in document.passages
        ]

        def write(conn: sqlite3.Connection) -> AddedDocument:
            if row(conn, _MINE, (record.collection_id, tenant)) is None:
                raise CollectionNotFound()
            same = row(
                conn,
                f"SELECT {DOCUMENT_COLUMNS} FROM documents d"
                " WHERE d.collection_id = ? AND d.sha256 = ?",
                (record.collection_id, record.sha256),
            )
            if same is not None:
                return AddedDocument(document_record(same), created=False)
            used = row(conn, _USED_BYTES, (tenant,))
            refusal = over_quota(int(used["n"]) if used else 0, document, self._limits)
            if refusal is not None:
                raise refusal
            conn.execute(
                "INSERT INTO documents (id, collection_id, title, name, kind, sha256, bytes,"
                " pages, passages, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            conn.executemany(
                "INSERT INTO passages (document_id, collection_id, page, number, heading, text)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                passages,
            )
            return AddedDocument(record, created=True)

        return await self._db.write(write, "new")

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, _MINE, (collection_id, tenant)) is None:
                return False
            gone = conn.execute(
                "DELETE FROM documents WHERE id = ? AND collection_id = ?",
                (document_id, collection_id),
            ).rowcount
            if gone:
                conn.execute("DELETE FROM passages WHERE document_id = ?", (document_id,))
            return bool(gone)

        return await self._db.write(write)

    async def search(
        self, tenant: str | None, collection_ids: Sequence[str], query: str, k: int
    ) -> list[PassageHit]:
        terms = query_terms(query)
        ids = list(dict.fromkeys(collection_ids))
        if not terms or not ids or k <= 0:
            return []
        sql = _SEARCH.format(ids=marks(ids))
        args = (fts5_match(terms), *ids, tenant, min(k, MAX_SEARCH_K))
        return [passage_hit(r) for r in await self._db.all(sql, args)]
