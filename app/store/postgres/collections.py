"""Collections on Postgres: a document with all its passages and their index, a document's
deletion, or a collection's, are one transaction, which first takes the tenant's advisory lock,
so that a tenant's writes to its collections (and the bytes they count against its limit)
follow one another, and a document is never added to a collection being deleted. A search's
steps (app/store/passage_index.py) run on one pooled connection."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

from app.store.collection_base import (
    RUN_COLLECTIONS,
    CollectionInUse,
    CollectionNotFound,
    CollectionRecord,
)
from app.store.collection_writes import CollectionStore, DocumentWrite, WriteSql, document_row
from app.store.index_sql import IndexSql
from app.store.passage_index import SearchQuery, search, unindex_document
from app.store.postgres.db import CALL_TIMEOUT_S, OPEN, PostgresDb, run_plan
from app.store.reads import Row

# A document's write is bounded as any call, plus this long a passage: its passages' postings
# are written inside the transaction.
MIN_PASSAGES_PER_S = 200
# COPY: a document's passages in one stream, not a statement each.
COPY_PASSAGES = (
    "COPY lats_passages (document_id, collection_id, page, number, heading, text) FROM STDIN"
)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('lats_collections'), hashtext(%s))"
INDEX = IndexSql.of(PostgresDb.dialect, "%s", staged=False, arrays=True)
"""The full-text index's statements on Postgres (app/store/index_sql.py)."""
_SQL = WriteSql.of(INDEX)
# An unfinished run that lists the collection among its parameters' collection ids.
_IN_USE = (
    "SELECT 1 FROM lats_runs WHERE status = ANY(%s)"
    f" AND params -> '{RUN_COLLECTIONS}' @> jsonb_build_array(%s::text) LIMIT 1"
)
# The tenant's document (id) in the collection (id).
_DOCUMENT = (
    "SELECT 1 FROM lats_documents d JOIN lats_collections c ON c.id = d.collection_id"
    " WHERE d.id = %s AND d.collection_id = %s AND c.tenant IS NOT DISTINCT FROM %s"
)


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

    _index = INDEX

    async def _add(self, tenant: str | None, document: DocumentWrite) -> Row | None:
        record, passages = document.record, document.passages
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
            await run_plan(conn, document.index(self._index))
        return None

    async def delete_document(
        self, tenant: str | None, collection_id: str, document_id: str
    ) -> bool:
        async with self._db.connection() as conn, conn.transaction():
            await _lock(conn, tenant)
            if not await _found(conn, _DOCUMENT, (document_id, collection_id, tenant)):
                return False
            await run_plan(conn, unindex_document(self._index, document_id))
            await conn.execute("DELETE FROM lats_passages WHERE document_id = %s", (document_id,))
            await conn.execute("DELETE FROM lats_documents WHERE id = %s", (document_id,))
        return True

    async def _search(self, query: SearchQuery) -> list[dict[str, Any]]:
        async with self._db.connection() as conn:
            return await run_plan(conn, search(self._index, query))


async def _lock(conn: AsyncConnection[Any], tenant: str | None) -> None:
    """The tenant's lock on its collections, until the transaction ends."""
    await conn.execute(_LOCK, (tenant or "",))


async def _found(conn: AsyncConnection[Any], sql: str, args: tuple[Any, ...]) -> bool:
    cur = await conn.execute(sql, args)
    return await cur.fetchone() is not None
