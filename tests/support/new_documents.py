"""Documents to store, read from files as the service reads them and cut into passages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.store.collection_base import NewDocument
from tools.documents.passages import passages
from tools.documents.reading import read_document


def read_file(
    collection_id: str,
    name: str,
    data: bytes,
    *,
    document_id: str | None = None,
    created_at: datetime | None = None,
) -> NewDocument:
    """The file `name` of content `data`, read, as a document of the collection (a fresh id and
    the time now unless given)."""
    read = read_document(name, data)
    return NewDocument(
        id=document_id or uuid.uuid4().hex,
        collection_id=collection_id,
        title=read.title,
        name=name,
        kind=read.kind,
        sha256=read.sha256,
        bytes=len(data),
        pages=len(read.pages),
        created_at=created_at or datetime.now(UTC),
        passages=passages(read),
    )
