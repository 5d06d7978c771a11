"""`local_docs`: the deployment's own folder of documents (`LATS_LOCAL_DOCS_DIR`), searched
through the store's full-text index, offline.

The service loads the folder into one collection of the store at start-up
(app/collections/local_folder.py) and hands this tool a `FolderSearch` over that collection:
the same search as the `documents` tool's, so no index of the folder is held in a process's
memory. Each passage found is shown with its document's title and page and recorded as
evidence whose URL names the file in the folder and the page (`local://ops/guide.pdf#page=3`,
`folder_url`).
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import quote

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.documents.search_tool import FoundPassage, Search, passage_tool
from tools.runtime import ToolRuntime

NAME = "local_docs"
MAX_PASSAGES = 5
URL_SCHEME = "local://"
DESCRIPTION = (
    "Search the private document collection configured for this service (PDF, Word, HTML, "
    "Markdown and text files), offline. Use it first when the question may concern internal or "
    "project-specific material, and to check what those documents say. Input: keywords. "
    "Returns up to {k} best-matching passages, each with its document's title and page."
)


class FolderPassage(FoundPassage, Protocol):
    """A passage of the folder's collection (the store's `PassageHit`): `name` is its file's
    path in the folder, in POSIX form."""

    @property
    def name(self) -> str: ...


FolderSearch = Search[FolderPassage]
"""A `Search` of the folder's collection."""


class LocalDocsInput(BaseModel):
    """Arguments of `local_docs`."""

    query: str = Field(description="Keywords to look for in the private documents.")


def folder_url(path: str, page: int | None) -> str:
    """`local://<path in the folder>`, with the page as a fragment for a paged document."""
    url = URL_SCHEME + quote(path, safe="/")
    return f"{url}#page={page}" if page else url


def passage_url(passage: FolderPassage) -> str:
    """The `folder_url` of `passage`'s file, at its page."""
    return folder_url(passage.name, passage.page)


def build_local_docs(
    search: FolderSearch, runtime: ToolRuntime, *, k: int = MAX_PASSAGES
) -> BaseTool:
    """The `local_docs` tool over `search`. Nothing is cached and a failed store is not marked
    down (as for `documents`): another process that loads a changed folder at its start-up
    changes the answers at once."""
    return passage_tool(NAME, DESCRIPTION, LocalDocsInput, search, passage_url, runtime, k)
