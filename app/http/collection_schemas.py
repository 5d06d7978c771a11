"""The bodies of the collection routes (app/http/routes/collections.py): what a collection and
a document look like to a caller, and the JSON bodies that add a collection or a document."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, StringConstraints

from app.collections.service import MAX_TITLE_CHARS
from app.store.collection_base import AddedDocument, CollectionRecord, DocumentRecord
from tools.documents.passages import Passage
from tools.documents.reading import Kind

MAX_NAME_CHARS = 100
# Printable text: no control character (a name is shown in lists and on a terminal).
_PRINTABLE = r"^[^\x00-\x1f\x7f]+$"

CollectionName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS, pattern=_PRINTABLE
    ),
]


class NewCollection(BaseModel):
    """`POST /collections`."""

    model_config = ConfigDict(extra="forbid")

    name: CollectionName = Field(description="Unique among the caller's collections.")


class CollectionView(BaseModel):
    """A collection, with how much it holds."""

    collection_id: str
    name: str
    created_at: datetime
    document_count: int = Field(description="How many documents it holds.")
    bytes: int = Field(description="The bytes of its documents' files together.")

    @classmethod
    def of(cls, record: CollectionRecord) -> CollectionView:
        return cls(
            collection_id=record.id,
            name=record.name,
            created_at=record.created_at,
            document_count=record.documents,
            bytes=record.bytes,
        )


class CollectionList(BaseModel):
    collections: list[CollectionView]
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")


class DocumentView(BaseModel):
    """A stored document: searchable (`indexed`) from the moment its upload answered."""

    document_id: str
    collection_id: str
    title: str
    name: str = Field(description="The file's name as uploaded (or fetched).")
    kind: Kind
    sha256: str = Field(description="Of the file's bytes: the same content is stored once.")
    bytes: int
    pages: int = Field(description="Pages read (1 for a document without pages).")
    passages: int = Field(description="Passages it was cut into, each searchable.")
    status: Literal["indexed"]
    created_at: datetime

    @classmethod
    def of(cls, record: DocumentRecord) -> DocumentView:
        return cls(document_id=record.id, **record.model_dump(exclude={"id"}))


class PassageView(BaseModel):
    """One passage of a page, in reading order."""

    number: int = Field(description="Its number on the page, from 1.")
    heading: str | None = Field(description="The heading it stands under, if any.")
    text: str


class PageView(BaseModel):
    """One page of a document: its passages as stored and searched, in order."""

    collection_id: str
    document_id: str
    page: int = Field(description="From 1 (1 for a document without pages).")
    passages: list[PassageView]

    @classmethod
    def of(cls, collection_id: str, document_id: str, page: int, cut: list[Passage]) -> PageView:
        return cls(
            collection_id=collection_id,
            document_id=document_id,
            page=page,
            passages=[PassageView(number=p.number, heading=p.heading, text=p.text) for p in cut],
        )


class CollectionDetail(CollectionView):
    """A collection and a page of its documents, newest first."""

    documents: list[DocumentView]
    next_offset: int | None = Field(
        description="Offset of the documents' next page; null on the last."
    )


class AddedDocumentView(DocumentView):
    created: bool = Field(
        description="False when the collection held the same content already: that document "
        "is given, and nothing was stored."
    )

    @classmethod
    def added(cls, added: AddedDocument) -> AddedDocumentView:
        record = added.document
        return cls(
            document_id=record.id, created=added.created, **record.model_dump(exclude={"id"})
        )


class DocumentsAdded(BaseModel):
    """The documents of an upload, in its order."""

    documents: list[AddedDocumentView]


class TextDocument(BaseModel):
    """A document given as text: read as Markdown (its `#` headings cut passages)."""

    model_config = ConfigDict(extra="forbid")

    title: Annotated[
        str,
        StringConstraints(
            strip_whitespace=True, min_length=1, max_length=MAX_TITLE_CHARS, pattern=_PRINTABLE
        ),
    ] = Field(description="The document's title, as citations show it.")
    text: str = Field(min_length=1, description="The document's text (Markdown or plain).")


class UrlDocument(BaseModel):
    """A document the service fetches (only where LATS_DOCUMENT_URLS allows it)."""

    model_config = ConfigDict(extra="forbid")

    url: AnyHttpUrl = Field(
        description="An http(s) URL of a public host; redirects are followed and checked.",
    )

    def target(self) -> str:
        return str(self.url)
