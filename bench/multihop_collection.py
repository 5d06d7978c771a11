"""The open-corpus setting served as a user's documents are: every paragraph of the pool stored
as one document of one collection in the service's own store (SQLite, FTS5's BM25), and each
run searching it with the service's `documents` tool, the code path a run over a user's
collection takes.

The tool's evidence names a stored document and its page, not a sentence; a verified
citation's supporting facts are found here instead, by where its quote lies in the paragraph's
text (`facts_of`), so supporting-fact scores read as in the distractor setting.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.tools import BaseTool

from agents.grounding.verify import Citation
from app.store.collection_base import CollectionRecord, NewDocument, PassageHit
from app.store.protocols import Collections
from app.store.sqlite.store import SqliteRunStore
from bench.multihop_data import CorpusDocument
from tools.documents.passages import passages
from tools.documents.reading import Page, ReadDocument
from tools.documents.search_tool import build_documents, document_place
from tools.runtime import ToolRuntime

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class PooledCollection:
    """The pool in a store of its own: the collection's id, and each stored document's pool
    document (by the stored id)."""

    store: SqliteRunStore
    collection_id: str
    documents: dict[str, CorpusDocument]

    def tool(self, runtime: ToolRuntime, k: int) -> BaseTool:
        """A run's `documents` tool over the collection, under the run's own runtime."""

        async def search(query: str, limit: int) -> Sequence[PassageHit]:
            return await self.store.collections.search(None, [self.collection_id], query, limit)

        return build_documents(search, runtime, k=k)

    def doc_of(self, url: str) -> str | None:
        """The pool document a source URL of the tool's names, or None."""
        place = document_place(url)
        document = self.documents.get(place.document_id) if place is not None else None
        return document.doc_id if document is not None else None

    def facts_of(self, citations: Iterable[Citation]) -> list[tuple[str, int]]:
        """The (pool document, sent_id) pairs that verified citations quote, in order, once
        each: the sentences the quote's words overlap in the paragraph."""
        facts: list[tuple[str, int]] = []
        for citation in citations:
            place = document_place(citation["source"]["url"])
            document = self.documents.get(place.document_id) if place is not None else None
            if document is None:
                continue
            for sent_id in quoted_sentences(document, citation["quote"]):
                if (document.doc_id, sent_id) not in facts:
                    facts.append((document.doc_id, sent_id))
        return facts

    async def close(self) -> None:
        await self.store.close()


def quoted_sentences(document: CorpusDocument, quote: str) -> list[int]:
    """The ids of `document`'s sentences that `quote` overlaps, whitespace aside; none when the
    quote is not in its text."""
    text: list[str] = []
    ranges: list[tuple[int, int, int]] = []
    at = 0
    for span in document.sentences:
        sent_id, piece = span.sent_id, _squash(document.text[span.start : span.end])
        if not piece:
            continue
        if text:
            at += 1
        ranges.append((sent_id, at, at + len(piece)))
        text.append(piece)
        at += len(piece)
    joined = " ".join(text)
    wanted = _squash(quote)
    start = joined.casefold().find(wanted.casefold()) if wanted else -1
    if start < 0:
        return []
    end = start + len(wanted)
    return [sent_id for sent_id, a, b in ranges if a < end and start < b]


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


async def pooled_collection(documents: Sequence[CorpusDocument], path: Path) -> PooledCollection:
    """`documents` stored in a new store at `path`, one document each (its title the
    paragraph's, its text cut into passages as an uploaded text file's is); a store left at
    `path` by an earlier process is replaced."""
    for old in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        old.unlink(missing_ok=True)
    store = await SqliteRunStore.open(path)
    try:
        return await _filled(store, documents)
    except BaseException:
        await store.close()
        raise


async def _filled(store: SqliteRunStore, documents: Sequence[CorpusDocument]) -> PooledCollection:
    collection = CollectionRecord(id=uuid.uuid4().hex, name="pool", created_at=datetime.now(UTC))
    await store.collections.create(collection)
    stored = await store_pool(store.collections, collection.id, documents)
    return PooledCollection(store, collection.id, stored)


async def store_pool(
    collections: Collections,
    collection_id: str,
    documents: Sequence[CorpusDocument],
    tenant: str | None = None,
    prefix: str = "d",
) -> dict[str, CorpusDocument]:
    """`documents` stored in the collection, one document each (its title the paragraph's,
    its text cut into passages as an uploaded text file's is, its id `<prefix><n>` from 1 in
    order: ids are the store's, unique across collections): each pool document by its id."""
    now = datetime.now(UTC)
    stored: dict[str, CorpusDocument] = {}
    for number, document in enumerate(documents, start=1):
        data = f"{document.title}\n{document.text}".encode()
        digest = hashlib.sha256(data).hexdigest()
        read = ReadDocument(
            title=document.title, kind="text", sha256=digest, pages=[Page(None, document.text)]
        )
        new = NewDocument(
            id=f"{prefix}{number}",
            collection_id=collection_id,
            title=document.title,
            name=f"{prefix}{number}.txt",
            kind="text",
            sha256=digest,
            bytes=len(data),
            pages=1,
            created_at=now,
            passages=passages(read),
        )
        await collections.add_document(tenant, new)
        stored[new.id] = document
    return stored
