"""The deployment's folder of documents (`LATS_LOCAL_DOCS_DIR`) loaded into one collection of
the store at start-up, for the `local_docs` tool (tools/local_docs.py).

The collection belongs to `FOLDER_TENANT`, a name no API key can have (app/keys/tenancy.py):
no caller reaches it through the collections API, and another key's collection rules are
untouched; the `local_docs` tool searches it for every run. It is found by its name and created
once: processes starting together meet on the store's unique (tenant, name), and the ones that
lose read the winner's.

Loading makes the collection hold the folder's files: every file under it (hidden files and
folders skipped) of a kind tools/documents/reading.py reads, up to the size an upload may have.
What changes follows `plan_load` (app/collections/folder_plan.py): an unchanged file is not
read again, a new or changed one is read in a bounded process of its own, as an upload's file
is (app/collections/reader.py), and stored whole in one transaction, and the document of a file
that is gone is deleted. A file that cannot be read or stored is logged and skipped; it never
stops the start-up. Processes loading at once do no harm: the store keeps one document per
content in a collection, and a document is deleted by its id.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from app.collections.folder_plan import FolderFile, plan_load
from app.collections.reader import DocumentReader
from app.collections.service import MAX_TITLE_CHARS
from app.store.collection_base import (
    CollectionNameTaken,
    CollectionRecord,
    DocumentRecord,
    DocumentRefusedByStore,
    NewDocument,
)
from app.store.protocols import Collections
from calls.errors import ConfigError
from tools.documents.reading import READ_SUFFIXES, DocumentRefused

logger = logging.getLogger(__name__)

FOLDER_TENANT = ":deployment"
"""The owner of the folder's collection: not a name an API key can have."""
COLLECTION_NAME = "local_docs"
_PAGE = 500
_HASH_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FolderLoad:
    """What one load did: the collection's id and how many documents were kept, stored,
    deleted, and how many files were skipped (unreadable, refused, or too large)."""

    collection_id: str
    kept: int = 0
    stored: int = 0
    deleted: int = 0
    skipped: int = 0


async def load_folder(
    collections: Collections, reader: DocumentReader, folder: Path, *, concurrency: int = 2
) -> FolderLoad:
    """Make the folder's collection hold `folder`'s files; at most `concurrency` files are
    read at once. Raises `ConfigError` when `folder` is not an existing folder (a folder not
    mounted must not empty the collection)."""
    if not await asyncio.to_thread(folder.is_dir):
        raise ConfigError(f"LATS_LOCAL_DOCS_DIR {str(folder)!r} is not an existing folder")
    collection_id = await folder_collection(collections)
    files, skipped = await asyncio.to_thread(scan_folder, folder, reader.limits.max_bytes)
    stored = await _stored(collections, collection_id)
    plan = plan_load(stored, files)
    loader = _Loader(collections, reader, folder, collection_id, asyncio.Semaphore(concurrency))
    added = await loader.store_all(plan.first)
    deleted = 0
    for document in plan.delete:
        if await collections.delete_document(FOLDER_TENANT, collection_id, document.id):
            deleted += 1
            logger.info(
                "local_docs: %s is gone or changed: its document was deleted", document.name
            )
    added += await loader.store_all(plan.after)
    skipped += len(plan.first) + len(plan.after) - added
    done = FolderLoad(collection_id, plan.kept, added, deleted, skipped)
    logger.info(
        "local_docs: folder %s loaded into collection=%s: %d kept, %d stored, %d deleted, "
        "%d skipped",
        folder,
        collection_id,
        done.kept,
        done.stored,
        done.deleted,
        done.skipped,
    )
    return done


async def folder_collection(collections: Collections) -> str:
    """The id of the folder's collection, created when there is none."""
    found = await _find(collections)
    if found is not None:
        return found
    record = CollectionRecord(
        id=uuid.uuid4().hex, tenant=FOLDER_TENANT, name=COLLECTION_NAME, created_at=_now()
    )
    try:
        await collections.create(record)
    except CollectionNameTaken:
        # Another process created it meanwhile: the store kept that one.
        found = await _find(collections)
        if found is None:
            raise
        return found
    logger.info("local_docs: collection=%s created for the folder", record.id)
    return record.id


def scan_folder(folder: Path, max_bytes: int) -> tuple[list[FolderFile], int]:
    """The files under `folder` that are read (their content hashed), by path, and how many
    were skipped (over `max_bytes`, or unreadable). Blocking: run it in a thread."""
    files: list[FolderFile] = []
    skipped = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            if name.startswith(".") or path.suffix.lower() not in READ_SUFFIXES:
                continue
            try:
                size = path.stat().st_size
                if size > max_bytes:
                    logger.warning("local_docs: %s skipped: over %d bytes", relative, max_bytes)
                    skipped += 1
                    continue
                files.append(FolderFile(relative, _sha256(path), size))
            except OSError as e:
                logger.warning("local_docs: %s skipped: %s", relative, e.strerror or e)
                skipped += 1
    return files, skipped


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


async def _find(collections: Collections) -> str | None:
    for record in await collections.page(FOLDER_TENANT, limit=_PAGE, offset=0):
        if record.name == COLLECTION_NAME:
            return record.id
    return None


async def _stored(collections: Collections, collection_id: str) -> list[DocumentRecord]:
    """Every document of the collection."""
    found: list[DocumentRecord] = []
    while True:
        page = await collections.documents(
            FOLDER_TENANT, collection_id, limit=_PAGE, offset=len(found)
        )
        found.extend(page)
        if len(page) < _PAGE:
            return found


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Loader:
    """Reads files of the folder and stores each as a document of its collection."""

    collections: Collections
    reader: DocumentReader
    folder: Path
    collection_id: str
    slots: asyncio.Semaphore

    async def store_all(self, files: Sequence[FolderFile]) -> int:
        """Store every file that can be; how many were."""
        done = await asyncio.gather(*(self.store(file) for file in files))
        return sum(done)

    async def store(self, file: FolderFile) -> bool:
        """Read `file` and store it; False (logged) when it was refused or unreadable."""
        async with self.slots:
            try:
                data = await asyncio.to_thread((self.folder / file.path).read_bytes)
                label = f"local_docs collection={self.collection_id}"
                read = await self.reader.read(PurePosixPath(file.path).name, data, label=label)
                added = await self.collections.add_document(
                    FOLDER_TENANT,
                    NewDocument(
                        id=uuid.uuid4().hex,
                        collection_id=self.collection_id,
                        title=read.title[:MAX_TITLE_CHARS],
                        name=file.path,
                        kind=read.kind,
                        sha256=read.sha256,
                        bytes=len(data),
                        pages=read.pages,
                        created_at=_now(),
                        passages=read.passages,
                    ),
                )
            except OSError as e:
                logger.warning("local_docs: %s skipped: %s", file.path, e.strerror or e)
                return False
            except (DocumentRefused, DocumentRefusedByStore) as e:
                logger.warning("local_docs: %s skipped: %s", file.path, e)
                return False
        if added.created:
            logger.info(
                "local_docs: %s stored as document=%s (%d pages, %d passages)",
                file.path,
                added.document.id,
                added.document.pages,
                added.document.passages,
            )
        return True
