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

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol
from urllib.parse import quote

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.documents.search_tool import FoundPassage, classify_store_error, found_hit
from tools.results import ToolResult, render_hits
from tools.runtime import ToolRuntime

NAME = "local_docs"
MAX_PASSAGES = 5
URL_SCHEME = "local://"
DESCRIPTION = (
    "Search the private document collection configured for this service (PDF, HTML, Markdown "
    "and text files), offline. Use it first when the question may concern internal or "
    "project-specific material, and to check what those documents say. Input: keywords. "
    "Returns up to {k} best-matching passages, each with its document's title and page."
)


class FolderPassage(FoundPassage, Protocol):
    """A passage of the folder's collection (the store's `PassageHit`): `name` is its file's
    path in the folder, in POSIX form."""

    @property
    def name(self) -> str: ...


FolderSearch = Callable[[str, int], Awaitable[Sequence[FolderPassage]]]
"""The best `k` passages of the folder's collection for a query, best first; raises
`ConnectionError` when its store cannot be reached (the call is then tried again)."""


class LocalDocsInput(BaseModel):
    """Arguments of `local_docs`."""

    query: str = Field(description="Keywords to look for in the private documents.")


def folder_url(path: str, page: int | None) -> str:
    """`local://<path in the folder>`, with the page as a fragment for a paged document."""
    url = URL_SCHEME + quote(path, safe="/")
    return f"{url}#page={page}" if page else url


def render_folder(query: str, found: Sequence[FolderPassage], max_chars: int) -> ToolResult:
    """The passages as the model reads them, each under its title and page, and as evidence."""
    hits = [found_hit(passage, folder_url(passage.name, passage.page)) for passage in found]
    return render_hits(NAME, query, hits, max_chars)


def build_local_docs(
    search: FolderSearch, runtime: ToolRuntime, *, k: int = MAX_PASSAGES
) -> BaseTool:
    """The `local_docs` tool over `search`. Nothing is cached and a failed store is not marked
    down (as for `documents`): another process that loads a changed folder at its start-up
    changes the answers at once."""
    runtime = replace(runtime, name=NAME, cache_ttl_s=0.0, down_s=0.0)

    async def fetch(query: str) -> ToolResult:
        return render_folder(query, await search(query, k), runtime.max_chars)

    return runtime.async_query_tool(
        DESCRIPTION.format(k=k), LocalDocsInput, fetch, classify_store_error
    )
