"""Collections on Postgres: a document and all its passages, or a collection's deletion, are one
transaction, which first takes the tenant's advisory lock, so that a tenant's writes to its
collections (and the bytes they count against its limit) follow one another, and a document is
never added to a collection being deleted. A document's deletion is one statement.

Search is BM25-like: the passages of the tenant's chosen collections holding any of the
query's words (app/store/query_words.py; `plainto_tsquery` per word, so no query is syntax),
ranked by the sum, over the words, of BM25's inverse document frequency (counted over the
passages searched) times `ts_rank` of that word (term frequency, saturating, over 1 + the log
of the passage's length).

What it costs is the passages it touches: counting a word's passages reads each one's row, and
`ts_rank` reads (and decompresses) each one's words. So, as on SQLite, a search counts each
word's passages only up to just past `CANDIDATES`, and finds only passages holding one of the
rarer words (`split_terms`; those holding only common words fill what fewer than `k` leave).
A word the planner's statistics (`ANALYZE`, which autovacuum
runs) put in more than `ESTIMATED` of the passages searched is not counted at all: its count is
estimated from its share of the table's passages, the one figure a search takes from beyond the
tenant's passages, and only for the table's most common words. The passages found are first
weighed by BM25 with every word held once (the inverse document frequencies of the words each
holds, a common word's found through the index among the passages holding a rarer one, over
the passage's length: its words are not read), and only the best `RERANKED` of them are ranked
by every word with `ts_rank`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

from app.store.collection_base import (
    RUN_COLLECTIONS,
    CollectionInUse,
    CollectionNotFound,
    CollectionRecord,
    DocumentRecord,
)
from app.store.collection_writes import CollectionStore, WriteSql, document_row, filled
from app.store.postgres.db import CALL_TIMEOUT_S, OPEN, PostgresDb
from app.store.query_words import CANDIDATES, split_terms
from app.store.reads import Row

# A document's write is bounded as any call, plus this long a passage: Postgres parses each
# passage's words (its generated `tsv`) and indexes them inside the transaction.
MIN_PASSAGES_PER_S = 200
# COPY: a document's passages in one stream, not a statement each.
COPY_PASSAGES = (
    "COPY lats_passages (document_id, collection_id, page, number, heading, text) FROM STDIN"
)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('lats_collections'), hashtext(%s))"
_SQL = WriteSql.of(PostgresDb.dialect, "%s")
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    "SELECT 1 FROM lats_runs WHERE status = ANY(%s)"
    f" AND params -> '{RUN_COLLECTIONS}' @> jsonb_build_array(%s::text) LIMIT 1"
)
_DELETE_DOCUMENT = (
    "WITH gone AS (DELETE FROM lats_documents d USING lats_collections c"
    " WHERE d.id = %(doc)s AND d.collection_id = %(coll)s AND c.id = d.collection_id"
    " AND c.tenant IS NOT DISTINCT FROM %(tenant)s RETURNING d.id),"
    " passages AS (DELETE FROM lats_passages WHERE document_id IN (SELECT id FROM gone))"
    " SELECT count(*) FROM gone"
)
# The tenant's collections among those asked for, the passages they hold, and for each word
# (`i` its position; no row for a word with no lexeme, a stop word of Postgres's) the share of
# the table's passages the planner's statistics give it (`share`, when they list it) and, unless
# that share of the passages searched is over `estimated`, how many of them hold it, counted up
# to `cap`.
_TERMS = """
WITH scope AS MATERIALIZED (
    SELECT COALESCE(array_agg(id), '{}') AS ids FROM lats_collections
    WHERE id = ANY(%(ids)s) AND tenant IS NOT DISTINCT FROM %(tenant)s
),
total AS MATERIALIZED (
    SELECT COALESCE(SUM(d.passages), 0)::float8 AS n FROM lats_documents d, scope
    WHERE d.collection_id = ANY(scope.ids)
),
common AS MATERIALIZED (
    SELECT e.lexeme, e.share FROM pg_stats s,
        unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, share)
    WHERE s.schemaname = current_schema() AND s.tablename = 'lats_passages'
      AND s.attname = 'tsv' AND e.lexeme IS NOT NULL
),
terms AS (
    SELECT t.i, t.q, c.share FROM (
        SELECT i - 1 AS i, plainto_tsquery('english', word) AS q
        FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, i)
    ) AS t
    LEFT JOIN common c ON c.lexeme = btrim(t.q::text, chr(39)) AND numnode(t.q) = 1
    WHERE numnode(t.q) > 0
)
SELECT (SELECT ids FROM scope) AS scope, (SELECT n FROM total) AS n, terms.i, terms.share,
    CASE WHEN terms.share IS NULL OR terms.share * (SELECT n FROM total) <= %(estimated)s THEN (
        SELECT count(*) FROM (
            SELECT 1 FROM lats_passages p, scope
            WHERE p.collection_id = ANY(scope.ids) AND p.tsv @@ terms.q
            LIMIT %(cap)s
        ) AS held
    ) END AS held
FROM terms
"""
# The passages of the scope holding a rarer word, each with the words it holds (a common word
# through the index, among the passages holding a rarer one: `found`), weighed by BM25 with
# each word held once, k1 1.2 and b 0.75 (1 + k1 (1 - b + b length / average) = 1.3 + 0.9 length
# / average, the length in bytes; no passage's words are read); the best `reranked` of them
# ranked by every word's inverse document frequency times its `ts_rank`.
_SEARCH = """
WITH words AS MATERIALIZED (
    SELECT plainto_tsquery('english', word) AS q, idf, rare
    FROM unnest(%(words)s::text[], %(idfs)s::float8[], %(rare)s::bool[]) AS t(word, idf, rare)
),
terms AS MATERIALIZED (
    SELECT words.q, words.idf,
        CASE WHEN words.rare THEN words.q ELSE words.q && rarer.q END AS found
    FROM words, (
        SELECT string_agg('(' || q::text || ')', ' | ')::tsquery AS q FROM words WHERE rare
    ) AS rarer
),
held AS MATERIALIZED (
    SELECT held.document_id, held.page, held.number, held.chars, SUM(terms.idf) AS idf
    FROM terms CROSS JOIN LATERAL (
        SELECT p.document_id, p.page, p.number, octet_length(p.text)::float8 AS chars
        FROM lats_passages p
        WHERE p.collection_id = ANY(%(scope)s) AND p.tsv @@ terms.found
    ) AS held
    GROUP BY held.document_id, held.page, held.number, held.chars
),
weighed AS MATERIALIZED (
    SELECT held.document_id, held.page, held.number,
        held.idf / (1.3 + 0.9 * held.chars / GREATEST(AVG(held.chars) OVER (), 1.0)) AS weight
    FROM held
    ORDER BY weight DESC, held.document_id, held.page, held.number
    LIMIT %(reranked)s
)
SELECT p.collection_id, p.document_id, p.page, p.number, p.text, d.title, d.name,
    (SELECT SUM(terms.idf * ts_rank(p.tsv, terms.q, 1)) FROM terms) AS score
FROM weighed w
JOIN lats_passages p
  ON p.document_id = w.document_id AND p.page = w.page AND p.number = w.number
JOIN lats_documents d ON d.id = p.document_id
ORDER BY score DESC, p.document_id, p.page, p.number
LIMIT %(k)s
"""
ESTIMATED = 1_000
"""A word the planner's statistics put in more passages than this is not counted."""
RERANKED = 100
"""How many of the passages weighed by their rarer words are ranked by every word."""


class PostgresCollections(CollectionStore[PostgresDb]):
    """`Collections` on Postgres."""

    async def _insert(self, collection: CollectionRecord) -> bool:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                f"{_SQL.insert_collection} ON CONFLICT DO NOTHING RETURNING id",
                (collection.id, collection.tenant, collection.name, collection.created_at),
            )
            return await cur.fetchone() is not None

    async def delete(self, tenant: str | None, collection_id: str) -> bool:
        async with self._db.connection() as conn, conn.transaction():
            await _lock(conn, tenant)
            if not await _found(conn, _SQL.mine, (collection_id, tenant)):
                return False
            if await _found(conn, _IN_USE, (OPEN, collection_id)):
                raise CollectionInUse()
            for sql in _SQL.delete_collection:
                await conn.execute(sql, (collection_id,))
        return True

    async def _add(
        self, tenant: str | None, record: DocumentRecord, passages: list[tuple[Any, ...]]
    ) -> Row | None:
        bound = CALL_TIMEOUT_S + len(passages) / MIN_PASSAGES_PER_S
        async with self._db.connection(bound) as conn, conn.transaction():
            await _lock(conn, tenant)
            if not await _found(conn, _SQL.mine, (record.collection_id, tenant)):
                raise CollectionNotFound()
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(_SQL.same_content, (record.collection_id, record.sha256))
                same = await cur.fetchone()
            if same is not None:
                return same
            used = await conn.execute(_SQL.used_bytes, (tenant,))
            (used_bytes,) = await used.fetchone() or (0,)
            self._check_room(int(used_bytes), record)
            await conn.execute(_SQL.insert_document, document_row(record, record.created_at))
            async with conn.cursor() as cur, cur.copy(COPY_PASSAGES) as copy:
                for passage in passages:
                    await copy.write_row(passage)
        return None

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        args = {"doc": document_id, "coll": collection_id, "tenant": tenant}
        async with self._db.connection() as conn:
            cur = await conn.execute(_DELETE_DOCUMENT, args)
            gone = await cur.fetchone()
        return bool(gone and gone[0])

    async def _ranked(
        self, tenant: str | None, ids: list[str], words: list[str], limit: int
    ) -> Sequence[Row]:
        args = {
            "ids": ids,
            "tenant": tenant,
            "words": words,
            "cap": CANDIDATES + 1,
            "estimated": ESTIMATED,
        }
        async with self._db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(_TERMS, args)
            counted = sorted(await cur.fetchall(), key=lambda r: int(r["i"]))
            if not counted or not counted[0]["scope"] or not counted[0]["n"]:
                return []
            n = float(counted[0]["n"])
            kept = [words[int(r["i"])] for r in counted]
            held = [_held(r["held"], r["share"], n) for r in counted]
            if not any(held):
                return []
            rare, common = split_terms(kept, held)
            search = {
                "words": kept,
                "idfs": [_idf(n, df) for df in held],
                "rare": [word in rare for word in kept],
                "scope": counted[0]["scope"],
                "reranked": max(RERANKED, limit),
                "k": limit,
            }
            await cur.execute(_SEARCH, search)
            rows = await cur.fetchall()
            if common and len(rows) < limit:
                # Fewer passages hold a rarer word than were asked for: those holding a common
                # one fill the rest (the passages found twice kept once; the scores compare).
                await cur.execute(_SEARCH, {**search, "rare": [w in common for w in kept]})
                return filled(rows, await cur.fetchall(), limit)
        return rows


def _held(counted: int | None, share: float | None, n: float) -> int:
    """How many passages of the scope hold a word: counted, or estimated from its share of the
    table's passages."""
    return int(counted) if counted is not None else round((share or 0.0) * n)


def _idf(n: float, held: int) -> float:
    """BM25's inverse document frequency of a word that `held` of `n` passages hold."""
    return math.log(1 + (n - held + 0.5) / (held + 0.5))


async def _lock(conn: AsyncConnection[Any], tenant: str | None) -> None:
    """The tenant's lock on its collections, until the transaction ends."""
    await conn.execute(_LOCK, (tenant or "",))


async def _found(conn: AsyncConnection[Any], sql: str, args: tuple[Any, ...]) -> bool:
    cur = await conn.execute(sql, args)
    return await cur.fetchone() is not None
