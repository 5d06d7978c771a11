"""Collections on SQLite: each write (a collection, a document with all its passages, a
deletion) is one function of the writer's connection, so it commits whole with its batch or
not at all (a process killed mid-way leaves nothing of it); the single writer makes a check and
the write after it one atomic step (a name's uniqueness, a tenant's bytes, a run's use).

Search is FTS5's (app/store/sqlite/schema.py): the passages holding any of the query's words
(app/store/query_words.py), ranked by FTS5's `bm25()`; the score given is its negation, so
higher is better. Its statistics (document frequencies, average length) are the whole index's,
every tenant's passages together; only the passages found are limited to the tenant's.

`bm25()` costs about a microsecond per passage it ranks (FTS5 reads each one's length), which
over every passage holding a common word is most of a search. So a search first counts, for
each word, the passages that hold it (capped: counting stops past `CANDIDATES`, and costs a
few hundredths of a microsecond a passage), and ranks only the passages holding one of the
rarer words (`split_terms`), each by all of the words: those holding a common word too match
`(rare) AND (common)`, the others `(rare) NOT (common)`, and either way `bm25()` sums over
every word of the expression, so a passage's score is what it would be in a search of all
the words. A passage holding none of the rarer words is ranked only when fewer than `k`
passages hold one (app/store/query_words.py says why that costs little). Only the best `k`
are then read whole."""

from __future__ import annotations

import sqlite3
from typing import Any

import aiosqlite

from app.store.collection_base import (
    RUN_COLLECTIONS,
    CollectionInUse,
    CollectionNotFound,
    CollectionRecord,
    DocumentRecord,
)
from app.store.collection_writes import (
    CollectionStore,
    WriteSql,
    collection_row,
    document_row,
    filled,
)
from app.store.query_words import CANDIDATES, fts5_match, split_terms
from app.store.reads import Row
from app.store.sqlite.db import OPEN, SqliteDb, marks, row

_SQL = WriteSql.of(SqliteDb.dialect)
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    f"SELECT 1 FROM runs, json_each(runs.params, '$.{RUN_COLLECTIONS}') AS used"
    f" WHERE runs.{OPEN} AND used.value = ? LIMIT 1"
)
# How many passages hold a word, counted up to a bound (one row per word, `i` its position).
_COUNT = (
    "SELECT ? AS i, COUNT(*) AS n FROM"
    " (SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? LIMIT ?)"
)
# The tenant's passages an FTS5 expression matches, each with its `bm25()` (lower is better).
_RANKED = """
SELECT passages_fts.rowid AS id, bm25(passages_fts) AS ranking FROM passages_fts
JOIN passages p ON p.id = passages_fts.rowid
WHERE passages_fts MATCH ?
  AND p.collection_id IN (SELECT id FROM collections WHERE id IN ({ids}) AND tenant IS ?)
"""
# The best `k` of the ranked ids (ties by id), and only then their rows: the text of a passage
# that is not among them is never read.
_SEARCH = """
SELECT p.collection_id, p.document_id, p.page, p.number, p.text, d.title, d.name,
    -top.ranking AS score
FROM ({ranked} ORDER BY ranking, id LIMIT ?) AS top
JOIN passages p ON p.id = top.id
JOIN documents d ON d.id = p.document_id
ORDER BY top.ranking, p.id
"""


class SqliteCollections(CollectionStore[SqliteDb]):
    """`Collections` on SQLite."""

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

    async def _add(
        self, tenant: str | None, record: DocumentRecord, passages: list[tuple[Any, ...]]
    ) -> Row | None:
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
            conn.executemany(_SQL.insert_passage, passages)
            return None

        return await self._db.write(write, "new")

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if row(conn, _SQL.mine, (collection_id, tenant)) is None:
                return False
            gone = conn.execute(
                "DELETE FROM documents WHERE id = ? AND collection_id = ?",
                (document_id, collection_id),
            ).rowcount
            if gone:
                conn.execute("DELETE FROM passages WHERE document_id = ?", (document_id,))
            return bool(gone)

        return await self._db.write(write)

    async def _ranked(
        self, tenant: str | None, ids: list[str], terms: list[str], limit: int
    ) -> list[Row]:
        async with self._db.searching() as searcher:
            counts = await _counts(searcher, terms)
            if not any(counts):
                return []
            rare, common = split_terms(terms, counts)
            scope = (*ids, tenant)
            ranked = _RANKED.format(ids=marks(ids))
            if common:
                either, others = fts5_match(rare), fts5_match(common)
                sql = _SEARCH.format(ranked=f"{ranked} UNION ALL {ranked}")
                args: tuple[object, ...] = (
                    f"({either}) AND ({others})",
                    *scope,
                    f"({either}) NOT ({others})",
                    *scope,
                )
            else:
                sql = _SEARCH.format(ranked=ranked)
                args = (fts5_match(rare), *scope)
            rows = await _rows(searcher, sql, (*args, limit))
            if common and len(rows) < limit:
                # Fewer passages hold a rarer word than were asked for: those holding only common
                # words fill the rest, ranked by every word as well (so that the scores compare).
                others_only = f"({fts5_match(common)}) NOT ({fts5_match(rare)})"
                rest = await _rows(
                    searcher,
                    _SEARCH.format(ranked=ranked),
                    (others_only, *scope, limit - len(rows)),
                )
                rows = filled(rows, rest, limit)
        return rows


async def _rows(searcher: aiosqlite.Connection, sql: str, args: tuple[object, ...]) -> list[Row]:
    return list(await searcher.execute_fetchall(sql, args))


async def _counts(searcher: aiosqlite.Connection, terms: list[str]) -> list[int]:
    """How many passages of the index hold each term, each counted up to just past
    `CANDIDATES` (all tenants': the cost of ranking is the whole index's)."""
    sql = " UNION ALL ".join(_COUNT for _ in terms)
    args = [x for i, term in enumerate(terms) for x in (i, fts5_match([term]), CANDIDATES + 1)]
    counts = [0] * len(terms)
    for r in await _rows(searcher, sql, tuple(args)):
        counts[int(r["i"])] = int(r["n"])
    return counts
