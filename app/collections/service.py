"""One door to the document collections, for the collection routes and the command line: the
store's collections seen by one caller, and documents taken in from uploaded files, pasted text
or a fetched URL.

A caller reaches only its own collections, as it reaches only its own runs
(app/access/run_access.py): the store finds a collection by its tenant (the caller's key name;
None without keys), so another key's collection or document is answered like a missing one.
The admin key's collections are its own: the store keeps no collection of every tenant.

An upload is read whole before anything of it is stored: every file is read into passages
(app/collections/reader.py, a bounded process per file), and one file refused refuses the
upload with nothing stored. Each document is then stored with all its passages in one
transaction (`Collections.add_document`); the same content stored before is found by its hash
and given back with `created` False.
"""

from __future__ import annotations

import builtins
import logging
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.collections.errors import DocumentNotFound, PageNotFound, UrlRefused
from app.collections.intake import DocumentIntake
from app.collections.reader import ReadFile
from app.collections.uploads import UploadedFile, shown
from app.keys.tenancy import SINGLE_USER, Caller
from app.store.collection_base import (
    AddedDocument,
    CollectionNotFound,
    CollectionRecord,
    DocumentRecord,
    DocumentRefusedByStore,
    NewDocument,
)
from app.store.protocols import Collections
from tools.documents.passages import Passage
from tools.documents.reading import DocumentRefused

logger = logging.getLogger(__name__)

MAX_TITLE_CHARS = 300
_NAME_STEM_CHARS = 200


@dataclass(frozen=True, slots=True)
class _Read:
    """A file read and about to be stored: its name, size, title and passages."""

    name: str
    size: int
    title: str
    read: ReadFile


def text_name(title: str) -> str:
    """The file name pasted text is kept under: its title, without path separators or control
    characters, as Markdown (so its `#` headings cut passages)."""
    kept = "".join(
        "-" if ch in "/\\" or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
        for ch in title
    )
    stem = kept.strip(" .-")[:_NAME_STEM_CHARS] or "text"
    return f"{stem}.md"


@dataclass(frozen=True, slots=True)
class CallerCollections:
    """The collections `caller` may reach, and the documents it adds to them."""

    store: Collections
    intake: DocumentIntake
    caller: Caller = SINGLE_USER

    @property
    def tenant(self) -> str | None:
        return self.caller.tenant

    async def create(self, name: str) -> CollectionRecord:
        """A new, empty collection of the caller; raises `CollectionNameTaken`."""
        record = CollectionRecord(
            id=uuid.uuid4().hex, tenant=self.tenant, name=name, created_at=datetime.now(UTC)
        )
        await self.store.create(record)
        logger.info("collection=%s created by caller=%s", record.id, self.caller.label)
        return record

    async def list(
        self, *, limit: int, offset: int
    ) -> tuple[builtins.list[CollectionRecord], int | None]:
        """A page of the caller's collections, newest first, and the next page's offset."""
        page = await self.store.page(self.tenant, limit=limit + 1, offset=offset)
        return page[:limit], offset + limit if len(page) > limit else None

    async def get(self, collection_id: str) -> CollectionRecord:
        """The collection; raises `CollectionNotFound` (also for another key's)."""
        record = await self.store.get(self.tenant, collection_id)
        if record is None:
            raise CollectionNotFound()
        return record

    async def documents(
        self, collection_id: str, *, limit: int, offset: int
    ) -> tuple[builtins.list[DocumentRecord], int | None]:
        """A page of the collection's documents, newest first, and the next page's offset."""
        await self.get(collection_id)
        page = await self.store.documents(
            self.tenant, collection_id, limit=limit + 1, offset=offset
        )
        return page[:limit], offset + limit if len(page) > limit else None

    async def delete(self, collection_id: str) -> None:
        """Delete the collection with its documents; raises `CollectionNotFound`, or
        `CollectionInUse` while an unfinished run lists it (nothing is deleted then)."""
        if not await self.store.delete(self.tenant, collection_id):
            raise CollectionNotFound()
        logger.info("collection=%s deleted by caller=%s", collection_id, self.caller.label)

    async def document(self, collection_id: str, document_id: str) -> DocumentRecord:
        """The document; raises `CollectionNotFound` or `DocumentNotFound`."""
        await self.get(collection_id)
        record = await self.store.document(self.tenant, collection_id, document_id)
        if record is None:
            raise DocumentNotFound()
        return record

    async def page(self, collection_id: str, document_id: str, page: int) -> builtins.list[Passage]:
        """The passages of the document's page `page` (from 1); raises `CollectionNotFound`,
        `DocumentNotFound`, or `PageNotFound` for a page the document does not have."""
        record = await self.document(collection_id, document_id)
        if page > record.pages:
            raise PageNotFound(page, record.pages)
        return await self.store.passages(self.tenant, collection_id, document_id, page)

    async def delete_document(self, collection_id: str, document_id: str) -> None:
        """Delete the document with its passages; raises `CollectionNotFound` or
        `DocumentNotFound`."""
        await self.get(collection_id)
        if not await self.store.delete_document(self.tenant, collection_id, document_id):
            raise DocumentNotFound()
        logger.info(
            "collection=%s document=%s deleted by caller=%s",
            collection_id,
            document_id,
            self.caller.label,
        )

    async def add_files(
        self, collection_id: str, files: Sequence[UploadedFile]
    ) -> builtins.list[AddedDocument]:
        """Read every file, then store each; raises `DocumentRefused` (naming the file) when
        one is not read, and nothing is stored then."""
        await self.get(collection_id)
        read: builtins.list[_Read] = []
        for file in files:
            data = await file.data()
            found = await self._read(collection_id, file.name, data)
            read.append(_Read(file.name, file.size, found.title, found))
        return await self._store(collection_id, read)

    async def add_text(
        self, collection_id: str, title: str, text: str
    ) -> builtins.list[AddedDocument]:
        """Store pasted text as a Markdown document titled `title`."""
        await self.get(collection_id)
        name = text_name(title)
        data = text.encode()
        found = await self._read(collection_id, name, data)
        return await self._store(collection_id, [_Read(name, len(data), title.strip(), found)])

    async def add_url(self, collection_id: str, url: str) -> builtins.list[AddedDocument]:
        """Fetch the document at `url` and store it; raises `UrlRefused` when fetching is off
        or the URL is not a public address, `UrlFailed` when the fetch fails."""
        await self.get(collection_id)
        if self.intake.fetcher is None:
            raise UrlRefused("this server does not fetch documents by URL (LATS_DOCUMENT_URLS)")
        fetched = await self.intake.fetcher.fetch(url)
        found = await self._read(collection_id, fetched.name, fetched.data)
        size = len(fetched.data)
        return await self._store(collection_id, [_Read(fetched.name, size, found.title, found)])

    async def _read(self, collection_id: str, name: str, data: bytes) -> ReadFile:
        """The file read into passages; a refusal names the file."""
        label = f"collection={collection_id}"
        try:
            return await self.intake.reader.read(name, data, label=label)
        except DocumentRefused as e:
            logger.info(
                "%s: a file was refused (%s) for caller=%s", label, e.code, self.caller.label
            )
            raise DocumentRefused(e.code, f"{shown(name)}: {e}") from e

    async def _store(
        self, collection_id: str, documents: Sequence[_Read]
    ) -> builtins.list[AddedDocument]:
        """Store each read document in its own transaction. Should the store refuse one (the
        key's total reached meanwhile by another upload), the refusal says how many of the
        upload's documents before it were stored."""
        added: builtins.list[AddedDocument] = []
        for done, document in enumerate(documents):
            new = NewDocument(
                id=uuid.uuid4().hex,
                collection_id=collection_id,
                title=document.title[:MAX_TITLE_CHARS],
                name=document.name,
                kind=document.read.kind,
                sha256=document.read.sha256,
                bytes=document.size,
                pages=document.read.pages,
                created_at=datetime.now(UTC),
                passages=document.read.passages,
            )
            try:
                result = await self.store.add_document(self.tenant, new)
            except DocumentRefusedByStore as e:
                before = f"; the {done} before it in this upload were stored" if done else ""
                raise type(e)(f"{shown(document.name)}: {e}{before}") from e
            self._log(result)
            added.append(result)
        return added

    def _log(self, added: AddedDocument) -> None:
        record = added.document
        if added.created:
            logger.info(
                "collection=%s document=%s stored: %s, %d pages, %d passages (caller=%s)",
                record.collection_id,
                record.id,
                record.kind,
                record.pages,
                record.passages,
                self.caller.label,
            )
        else:
            logger.info(
                "collection=%s document=%s already holds that content (caller=%s)",
                record.collection_id,
                record.id,
                self.caller.label,
            )
