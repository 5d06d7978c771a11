"""What the store keeps of a tenant's document collections and what it refuses: the records of
collections, documents and search hits, the limits a document is held to, and the errors. The
interface is `Collections` in app/store/protocols.py.

A collection belongs to one tenant (the name of the API key that made it; None on a service
without keys) and is found only by that tenant: another tenant's id finds nothing, whether it is
read, listed, written to, deleted or searched. A document is stored whole with its passages in
one transaction, so the store never holds part of one; it is `indexed` (searchable) from the
moment that transaction commits, on every process. A run uses the collections whose ids its
parameters list under `collections` (`RUN_COLLECTIONS`): no table records the use, the open
runs' parameters are read when a collection is deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.errors import ServiceError
from app.store.base import StoreUnavailable
from tools.documents.passages import Passage
from tools.documents.reading import Kind, ReadLimits

RUN_COLLECTIONS = "collections"
"""The run parameter that lists the ids of the collections a run searches."""

MAX_FILE_BYTES = ReadLimits().max_bytes  # 25 MiB, the reader's own bound
MAX_TENANT_BYTES = 1024 * 1024 * 1024
MAX_PASSAGES = 20_000  # a 2,000-page PDF (the reader's bound) at 10 passages a page
MAX_SEARCH_K = 100


@dataclass(frozen=True, slots=True)
class CollectionLimits:
    """Bounds of what a tenant may store: a file's bytes (as uploaded), the bytes of all of a
    tenant's documents together, and one document's passages."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_tenant_bytes: int = MAX_TENANT_BYTES
    max_passages: int = MAX_PASSAGES


class CollectionNameTaken(ServiceError, code="collection_exists"):
    """The tenant already has a collection of that name: nothing was stored."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a collection named {name!r} exists already")


class CollectionNotFound(ServiceError, code="collection_not_found"):
    """No collection of this id belongs to the tenant (none at all, or another tenant's)."""

    def __init__(self) -> None:
        super().__init__("there is no such collection")


class CollectionInUse(ServiceError, code="collection_in_use"):
    """A run that uses the collection has not finished: nothing was deleted."""

    def __init__(self) -> None:
        super().__init__(
            "the collection is used by a run that has not finished; cancel the run or wait "
            "for it to end, then delete the collection"
        )


class DocumentRefusedByStore(ServiceError, code="document_refused"):
    """A document the store does not take (over a limit, or a passage it cannot hold):
    nothing of it was stored. `code` says which limit."""


class DocumentTooLarge(DocumentRefusedByStore, code="too_large"):
    """A file over the per-file bytes, or a document over the passages per document."""


class QuotaExceeded(DocumentRefusedByStore, code="quota_exceeded"):
    """The document would take the tenant's documents over their total bytes."""


class CollectionRecord(BaseModel):
    """One collection as stored, with what it holds."""

    id: str
    tenant: str | None = Field(
        default=None, description="The name of the API key that made it; None without keys."
    )
    name: str = Field(description="Unique among the tenant's collections.")
    created_at: datetime
    documents: int = Field(default=0, description="How many documents it holds.")
    bytes: int = Field(default=0, description="The bytes of its documents' files together.")


class DocumentRecord(BaseModel):
    """One stored document: a file read into pages and cut into passages."""

    id: str
    collection_id: str
    title: str
    name: str = Field(description="The file's name as uploaded.")
    kind: Kind
    sha256: str = Field(description="Of the file's bytes: the same content is stored once.")
    bytes: int = Field(description="The file's size as uploaded.")
    pages: int = Field(description="How many pages were read (1 for a document without pages).")
    passages: int = Field(description="How many passages it was cut into.")
    status: Literal["indexed"] = Field(
        default="indexed",
        description="Always `indexed`: a document is stored whole with its passages, "
        "searchable at once; one still being read is not in the store.",
    )
    created_at: datetime


@dataclass(frozen=True)
class NewDocument:
    """A document to store: its record's fields but the passage count, and its passages."""

    id: str
    collection_id: str
    title: str
    name: str
    kind: Kind
    sha256: str
    bytes: int
    pages: int
    created_at: datetime
    passages: Sequence[Passage]

    def record(self) -> DocumentRecord:
        """The record the store keeps of it."""
        return DocumentRecord(
            id=self.id,
            collection_id=self.collection_id,
            title=self.title,
            name=self.name,
            kind=self.kind,
            sha256=self.sha256,
            bytes=self.bytes,
            pages=self.pages,
            passages=len(self.passages),
            created_at=self.created_at,
        )


@dataclass(frozen=True, slots=True)
class AddedDocument:
    """The stored document, and whether this call stored it (False: the collection already
    held the same content, and that document is given)."""

    document: DocumentRecord
    created: bool


class PassageHit(BaseModel):
    """A passage a search found."""

    passage_id: str = Field(description="The document's id and the passage's (`<doc>:p12.3`).")
    collection_id: str
    document_id: str
    title: str = Field(description="The document's title.")
    name: str = Field(
        default="", description="The document's file name (its path in a loaded folder)."
    )
    page: int | None = Field(description="The page, from 1; None for a document without pages.")
    text: str
    score: float = Field(description="Higher is better; comparable within one search only.")


def passage_id(document_id: str, page: int | None, number: int) -> str:
    """A passage's id in the store: its document's id and its id in the document."""
    return f"{document_id}:p{page or 0}.{number}"


def check_document(document: NewDocument, limits: CollectionLimits) -> None:
    """Refuses a document over the per-file limits, or with a passage no store can hold (a NUL
    character, which Postgres text refuses), before anything of it is written."""
    if document.bytes > limits.max_file_bytes:
        raise DocumentTooLarge(f"the file is over the limit of {limits.max_file_bytes:,} bytes")
    if len(document.passages) > limits.max_passages:
        raise DocumentTooLarge(
            f"the document has {len(document.passages):,} passages, over the limit of "
            f"{limits.max_passages:,}"
        )
    if not document.passages:
        raise DocumentRefusedByStore("the document has no passages to search")
    if any("\x00" in p.text or "\x00" in (p.heading or "") for p in document.passages):
        raise DocumentRefusedByStore("a passage of the document holds a NUL character")


def over_quota(
    used: int, document: NewDocument | DocumentRecord, limits: CollectionLimits
) -> QuotaExceeded | None:
    """The refusal of a document that would take its tenant's `used` bytes over the limit."""
    if used + document.bytes <= limits.max_tenant_bytes:
        return None
    return QuotaExceeded(
        f"the document would take this key's documents over {limits.max_tenant_bytes:,} bytes"
        f" ({used:,} stored); delete documents to make room"
    )


StoreSearch = Callable[[str | None, Sequence[str], str, int], Awaitable[Sequence[PassageHit]]]
"""`Collections.search`: a tenant's collections, a query, how many passages."""
ToolSearch = Callable[[str, int], Awaitable[Sequence[PassageHit]]]


def tool_search(search: StoreSearch, tenant: str | None, ids: Sequence[str]) -> ToolSearch:
    """`search` of `tenant`'s collections `ids` as a tool calls it (a query, how many): a store
    out of reach is the `ConnectionError` a tool's call is tried again on."""
    chosen = tuple(ids)

    async def searching(query: str, k: int) -> Sequence[PassageHit]:
        try:
            return await search(tenant, chosen, query, k)
        except StoreUnavailable as e:
            raise ConnectionError(str(e)) from e

    return searching
