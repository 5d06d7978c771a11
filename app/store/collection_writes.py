"""What the dialects' `Collections` share beyond the reads, and what `lats migrate`'s copies of
collections share with them: the statements of the writes, written once over a dialect's table
names (app/store/reads.py says how), the rows they write, a document checked against the
limits before a write, and a search's words, bound and hits, around each dialect's ranking."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from app.store.collection_base import (
    MAX_SEARCH_K,
    AddedDocument,
    CollectionLimits,
    CollectionNameTaken,
    CollectionRecord,
    DocumentRecord,
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
from app.store.index_sql import IndexSql, Plan
from app.store.passage_index import DocumentWords, SearchQuery, index_document
from app.store.query_words import query_terms
from app.store.reads import DbT, Row
from tools.documents.passages import Passage


@dataclass(frozen=True, slots=True)
class WriteSql:
    """The statements both dialects' writes make, in one dialect's spelling (`mark`, its
    placeholder)."""

    mine: str  # a row when the collection (id) belongs to the tenant
    used_bytes: str  # the bytes of the tenant's documents together, as `n`
    same_content: str  # the collection's (id) document of a SHA-256, if any
    delete_collection: tuple[str, ...]  # a collection (id): its index, documents, passages
    insert_collection: str  # a `collection_row`
    insert_document: str  # a `document_row`
    insert_passage: str  # a row of `passage_rows`

    @classmethod
    def of(cls, index: IndexSql) -> WriteSql:
        """The statements in the dialect and placeholder of `index`, the full-text index's
        (whose rows a collection's deletion removes first)."""
        dialect, mark = index.dialect, index.mark

        def sql(text: str) -> str:
            return text.replace("?", mark)

        collections, documents, passages = dialect.collections, dialect.documents, dialect.passages
        return cls(
            mine=sql(f"SELECT 1 FROM {collections} WHERE id = ? AND tenant {dialect.same} ?"),
            used_bytes=sql(
                f"SELECT CAST(COALESCE(SUM(d.bytes), 0) AS BIGINT) AS n FROM {documents} d"
                f" JOIN {collections} c ON c.id = d.collection_id WHERE c.tenant {dialect.same} ?"
            ),
            same_content=sql(
                f"SELECT {DOCUMENT_COLUMNS} FROM {documents} d"
                " WHERE d.collection_id = ? AND d.sha256 = ?"
            ),
            delete_collection=(
                *index.delete_collection,
                sql(f"DELETE FROM {passages} WHERE collection_id = ?"),
                sql(f"DELETE FROM {documents} WHERE collection_id = ?"),
                sql(f"DELETE FROM {collections} WHERE id = ?"),
            ),
            insert_collection=sql(
                f"INSERT INTO {collections} (id, tenant, name, created_at) VALUES (?, ?, ?, ?)"
            ),
            insert_document=sql(
                f"INSERT INTO {documents} (id, collection_id, title, name, kind, sha256, bytes,"
                " pages, passages, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            insert_passage=sql(
                f"INSERT INTO {passages} (document_id, collection_id, page, number, heading,"
                " text) VALUES (?, ?, ?, ?, ?, ?)"
            ),
        )


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    """What adding a document writes: its record, its passages' rows (`passage_rows`) and
    their words, counted for the index."""

    record: DocumentRecord
    passages: list[tuple[Any, ...]]
    words: DocumentWords

    def index(self, sql: IndexSql) -> Plan[None]:
        """The steps that index the passages, once their rows are written."""
        return index_document(sql, self.record.collection_id, self.record.id, self.words)


class CollectionStore(CollectionReads[DbT], ABC):
    """`Collections` but each dialect's transactions and ranking: the reads, the refusals (a
    name taken, a document over the limits, checked before its transaction), what adding a
    document answers, and a search's words, bound and hits."""

    def __init__(self, db: DbT, limits: CollectionLimits | None = None) -> None:
        super().__init__(db)
        self._limits = limits or CollectionLimits()

    _index: ClassVar[IndexSql]  # the full-text index's statements in the dialect's spelling

    async def create(self, collection: CollectionRecord) -> None:
        if not await self._insert(collection):
            raise CollectionNameTaken(collection.name)

    @abstractmethod
    async def _insert(self, collection: CollectionRecord) -> bool:
        """Store the new collection unless its tenant has one of that name; whether it was
        stored."""

    async def add_document(self, tenant: str | None, document: NewDocument) -> AddedDocument:
        check_document(document, self._limits)
        record = document.record()
        # The words are counted off the event loop: a large document's take a while.
        words = await asyncio.to_thread(DocumentWords.of, document.passages)
        rows = passage_rows(record, document.passages)
        same = await self._add(tenant, DocumentWrite(record, rows, words))
        if same is not None:
            return AddedDocument(document_record(same), created=False)
        return AddedDocument(record, created=True)

    @abstractmethod
    async def _add(self, tenant: str | None, document: DocumentWrite) -> Row | None:
        """In one transaction: the row of the collection's document of the same content
        (`same_content`), or, when it holds none, None and the document stored with its
        passages and their index. Raises `CollectionNotFound`, or what `_check_room` raises,
        and stores nothing."""

    def _check_room(self, used: int, record: DocumentRecord) -> None:
        """Raises `QuotaExceeded` when the document would take its tenant's `used` bytes over
        the limit."""
        refusal = over_quota(used, record, self._limits)
        if refusal is not None:
            raise refusal

    async def search(
        self, tenant: str | None, collection_ids: Sequence[str], query: str, k: int
    ) -> list[PassageHit]:
        words = query_terms(query)
        ids = list(dict.fromkeys(collection_ids))
        if not words or not ids or k <= 0:
            return []
        asked = SearchQuery(tenant, tuple(ids), tuple(words), min(k, MAX_SEARCH_K))
        return [passage_hit(r) for r in await self._search(asked)]

    @abstractmethod
    async def _search(self, query: SearchQuery) -> list[dict[str, Any]]:
        """What a search's steps (app/store/passage_index.py `search`) return for `query`,
        run where the dialect runs them."""


def collection_row(collection: CollectionRecord, created_at: Any) -> tuple[Any, ...]:
    """A collection's row of `insert_collection`, its time as the dialect stores it."""
    return (collection.id, collection.tenant, collection.name, created_at)


def document_row(document: DocumentRecord, created_at: Any) -> tuple[Any, ...]:
    """A document's row of `insert_document`, its time as the dialect stores it."""
    return (
        document.id,
        document.collection_id,
        document.title,
        document.name,
        document.kind,
        document.sha256,
        document.bytes,
        document.pages,
        document.passages,
        created_at,
    )


def passage_rows(document: DocumentRecord, passages: Sequence[Passage]) -> list[tuple[Any, ...]]:
    """The rows of `insert_passage` of a document's passages (page 0: a document without
    pages)."""
    return [
        (document.id, document.collection_id, p.page or 0, p.number, p.heading, p.text)
        for p in passages
    ]
