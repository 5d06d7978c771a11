"""The `local_docs` tool's search (`tools.local_docs.FolderSearch`): the store's full-text search
over the collection the folder was loaded into (app/collections/local_folder.py), the same search
as the `documents` tool's.

A process builds its tools before it opens its store (a misconfiguration fails first), so the
tool is given the search of `LoadedFolder`, one per folder in the process (`loaded_folder`),
which `folder_loaded` binds to the store once the folder is loaded and unbinds when the store
closes. Asked while unbound, it raises `FolderNotLoaded`.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from app.collections.errors import FolderNotLoaded
from app.collections.local_folder import FOLDER_TENANT, load_folder
from app.collections.reader import DocumentReader
from app.store.collection_base import PassageHit, ToolSearch, tool_search
from app.store.protocols import Collections


@dataclass(frozen=True, slots=True)
class _Bound:
    collections: Collections
    search: ToolSearch


class LoadedFolder:
    """The search over one folder's collection, once a store is bound (`bind`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._bound: _Bound | None = None

    def bind(self, collections: Collections, collection_id: str) -> None:
        """Search `collection_id` of `collections` from now on."""
        search = tool_search(collections.search, FOLDER_TENANT, (collection_id,))
        self._bound = _Bound(collections, search)

    def unbind(self, collections: Collections) -> None:
        """Stop searching `collections` (a store closing); a later binding is left alone."""
        if self._bound is not None and self._bound.collections is collections:
            self._bound = None

    async def search(self, query: str, k: int) -> Sequence[PassageHit]:
        """The best `k` passages of the folder for `query`, best first."""
        bound = self._bound
        if bound is None:
            raise FolderNotLoaded()
        return await bound.search(query, k)


_FOLDERS: dict[Path, LoadedFolder] = {}
_FOLDERS_LOCK = threading.Lock()


def loaded_folder(folder: Path) -> LoadedFolder:
    """The process's one `LoadedFolder` of `folder`."""
    folder = folder.resolve()
    with _FOLDERS_LOCK:
        return _FOLDERS.setdefault(folder, LoadedFolder(folder))


@asynccontextmanager
async def folder_loaded(
    folder: Path, collections: Collections, reader: DocumentReader, *, concurrency: int
) -> AsyncIterator[LoadedFolder]:
    """`folder` loaded into its collection of `collections` and its search bound to them
    until the block ends."""
    loaded = loaded_folder(folder)
    done = await load_folder(collections, reader, loaded.folder, concurrency=concurrency)
    loaded.bind(collections, done.collection_id)
    try:
        yield loaded
    finally:
        loaded.unbind(collections)
