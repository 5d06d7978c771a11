"""Collections on Postgres: a document and all its passages, or a collection's deletion, are one
transaction, which first takes the tenant's advisory lock, so that a tenant's writes to its
collections (and the bytes they count against its limit) follow one another, and a document is
never added to a collection being deleted. A document's deletion is one statement.

Search is BM25-like: the passages of the tenant's chosen collections holding any of the
query's words (app/store/query_words.py; `plainto_tsquery` per word, so no query is syntax),
ranked by the sum, over the words, of BM25's inverse document frequency (counted over the
passages searched, never another tenant's) times `ts_rank` of that word (term frequency,
saturating, over 1 + the log of the passage's length)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

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
from app.store.postgres.db import CALL_TIMEOUT_S, OPEN, PostgresDb
from app.store.query_words import query_terms

# A document's write is bounded as any call, plus this long a passage: Postgres parses each
# passage's words (its generated `tsv`) and indexes them inside the transaction.
MIN_PASSAGES_PER_S = 200
# COPY: a document's passages in one stream, not a statement each.
COPY_PASSAGES = (
    "COPY lats_passages (document_id, collection_id, page, number, heading, text) FROM STDIN"
)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('lats_collections'), hashtext(%s))"
_MINE = "SELECT 1 FROM lats_collections WHERE id = %s AND tenant IS NOT DISTINCT FROM %s"
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    "SELECT 1 FROM lats_runs WHERE status = ANY(%s)"
    f" AND params -> '{RUN_COLLECTIONS}' @> jsonb_build_array(%s::text) LIMIT 1"
)
_USED_BYTES = (
    "SELECT COALESCE(SUM(d.bytes), 0)::bigint FROM lats_documents d"
    " JOIN lats_collections c ON c.id = d.collection_id"
    " WHERE c.tenant IS NOT DISTINCT FROM %s"
)
_DELETE_DOCUMENT = (
    "WITH gone AS (DELETE FROM lats_documents d USING lats_collections c"
    " WHERE d.id = %(doc)s AND d.collection_id = %(coll)s AND c.id = d.collection_id"
    " AND c.tenant IS NOT DISTINCT FROM %(tenant)s RETURNING d.id),"
    " passages AS (DELETE FROM lats_passages WHERE document_id IN (SELECT id FROM gone))"
    " SELECT count(*) FROM gone"
)
_SEARCH = """
WITH scope AS MATERIALIZED (
    SELECT id FROM lats_collections
    WHERE id = ANY(%(ids)s) AND tenant IS NOT DISTINCT FROM %(tenant)s
),
terms AS MATERIALIZED (
    SELECT q FROM (
        SELECT plainto_tsquery('english', word) AS q FROM unnest(%(words)s::text[]) AS word
    ) AS parsed
    WHERE numnode(q) > 0
),
total AS (
    SELECT GREATEST(COALESCE(SUM(passages), 0), 1)::float8 AS n FROM lats_documents
    WHERE collection_id IN (SELECT id FROM scope)
),
weights AS MATERIALIZED (
    SELECT terms.q, ln(1 + (total.n - df.n + 0.5) / (df.n + 0.5)) AS idf
    FROM terms CROSS JOIN total CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS n FROM lats_passages p
        WHERE p.collection_id IN (SELECT id FROM scope) AND p.tsv @@ terms.q
    ) AS df
)
SELECT p.collection_id, p.document_id, p.page, p.number, p.text, d.title,
    (SELECT SUM(w.idf * ts_rank(p.tsv, w.q, 1)) FROM weights w) AS score
FROM lats_passages p JOIN lats_documents d ON d.id = p.document_id
WHERE p.collection_id IN (SELECT id FROM scope)
  AND p.tsv @@ (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery FROM terms)
ORDER BY score DESC, p.document_id, p.page, p.number
LIMIT %(k)s
"""


class PostgresCollections(CollectionReads[PostgresDb]):
    """`Collections` on Postgres."""

    def __init__(self, db: PostgresDb, limits: CollectionLimits | None = None) -> None:
        super().__init__(db)
        self._limits = limits or CollectionLimits()

    async def create(self, collection: CollectionRecord) -> None:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO lats_collections (id, tenant, name, created_at)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (collection.id, collection.tenant, collection.name, collection.created_at),
            )
            stored = await cur.fetchone()
        if stored is None:
            raise CollectionNameTaken(collection.name)

    async def delete(self, tenant: str | None, collection_id: str) -> bool:
        async with self._db.connection() as conn, conn.transaction():
            await _lock(conn, tenant)
            if not await _found(conn, _MINE, (collection_id, tenant)):
                return False
            if await _found(conn, _IN_USE, (OPEN, collection_id)):
                raise CollectionInUse()
            for sql in (
                "DELETE FROM lats_passages WHERE collection_id = %s",
                "DELETE FROM lats_documents WHERE collection_id = %s",
                "DELETE FROM lats_collections WHERE id = %s",
            ):
                await conn.execute(sql, (collection_id,))
        return True

    async def add_document(self, tenant: str | None, document: NewDocument) -> AddedDocument:
        check_document(document, self._limits)
        record = document.record()
        passages = [
            (record.id, record.collection_id, p.page or 0, p.number, p.heading, p.text)
            for p in document.passages
        ]
        bound = CALL_TIMEOUT_S + len(passages) / MIN_PASSAGES_PER_S
        async with self._db.connection(bound) as conn, conn.transaction():
            await _lock(conn, tenant)
            if not await _found(conn, _MINE, (record.collection_id, tenant)):
                raise CollectionNotFound()
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(
                    f"SELECT {DOCUMENT_COLUMNS} FROM lats_documents d"
                    " WHERE d.collection_id = %s AND d.sha256 = %s",
                    (record.collection_id, record.sha256),
                )
                same = await cur.fetchone()
            if same is not None:
                return AddedDocument(document_record(same), created=False)
            used = await conn.execute(_USED_BYTES, (tenant,))
            (used_bytes,) = await used.fetchone() or (0,)
            refusal = over_quota(int(used_bytes), document, self._limits)
            if refusal is not None:
                raise refusal
            await conn.execute(
                "INSERT INTO lats_documents (id, collection_id, title, name, kind, sha256,"
                " bytes, pages, passages, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    record.id,
                    record.collection_id,
                    record.title,
                    record.name,
                    record.kind,
                    record.sha256,
                    record.bytes,
                    record.pages,
                    record.passages,
                    record.created_at,
                ),
            )
            async with conn.cursor() as cur, cur.copy(COPY_PASSAGES) as copy:
                for passage in passages:
                    await copy.write_row(passage)
        return AddedDocument(record, created=True)

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        args = {"doc": document_id, "coll": collection_id, "tenant": tenant}
        async with self._db.connection() as conn:
            cur = await conn.execute(_DELETE_DOCUMENT, args)
            gone = await cur.fetchone()
        return bool(gone and gone[0])

    async def search(
        self, tenant: str | None, collection_ids: Sequence[str], query: str, k: int
    ) -> list[PassageHit]:
        terms = query_terms(query)
        ids = list(dict.fromkeys(collection_ids))
        if not terms or not ids or k <= 0:
            return []
        args = {"ids": ids, "tenant": tenant, "words": terms, "k": min(k, MAX_SEARCH_K)}
        async with self._db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(_SEARCH, args)
            rows = await cur.fetchall()
        return [passage_hit(r) for r in rows]


async def _lock(conn: AsyncConnection[Any], tenant: str | None) -> None:
    """The tenant's lock on its collections, until the transaction ends."""
    await conn.execute(_LOCK, (tenant or "",))


async def _found(conn: AsyncConnection[Any], sql: str, args: tuple[Any, ...]) -> bool:
    cur = await conn.execute(sql, args)
    return await cur.fetchone() is not None
