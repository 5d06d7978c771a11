"""`documents`: the run's collections searched through the store's full-text index.

A run that names collections (run parameter `collections`) gets this tool bound to them: the
service hands it a `PassageSearch` over the run's tenant and collection ids (the store's
`Collections.search`), so the tool itself holds no index and no ids of its own. Each passage
found is shown with its document's title and page ("Annual report, p. 12") and recorded as
evidence whose URL names the collection, the document and the page
(`/collections/<c>/documents/<d>#page=12`, `document_url`), so a citation of it is verified
like any other and names the page it quotes.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.results import Hit, ToolResult, render_hits
from tools.runtime import ToolCallError, ToolRuntime

NAME = "documents"
MAX_PASSAGES = 5
DESCRIPTION = (
    "Search the user's own documents (the collections chosen for this run), offline. Input: "
    "keywords, such as a name, a term or a phrase from the documents. Returns up to {k} "
    "best-matching passages, each with its document's title and page."
)
_URL = re.compile(r"^/collections/([^/#?]+)/documents/([^/#?]+)(?:#page=(\d+))?$")


class FoundPassage(Protocol):
    """A passage a search found (the store's `PassageHit`)."""

    @property
    def collection_id(self) -> str: ...

    @property
    def document_id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def page(self) -> int | None: ...

    @property
    def text(self) -> str: ...


P = TypeVar("P", bound=FoundPassage)

Search = Callable[[str, int], Awaitable[Sequence[P]]]
"""The best `k` passages for a query, best first; raises `ConnectionError` when its store
cannot be reached (the call is then tried again)."""

PassageSearch = Search[FoundPassage]
"""A `Search` of the run's collections only."""


class DocumentsInput(BaseModel):
    """Arguments of `documents`."""

    query: str = Field(description="Keywords to look for in the user's documents.")


@dataclass(frozen=True, slots=True)
class DocumentPlace:
    """Where a citation of a document points: its collection, the document and the page
    (None for a document without pages)."""

    collection_id: str
    document_id: str
    page: int | None


def document_url(place: DocumentPlace) -> str:
    """The service's address of the document, with its page as a fragment."""
    url = f"/collections/{place.collection_id}/documents/{place.document_id}"
    return f"{url}#page={place.page}" if place.page else url


def document_place(url: str) -> DocumentPlace | None:
    """The place `document_url` made `url` from, or None for any other URL."""
    match = _URL.match(url)
    if match is None:
        return None
    page = match.group(3)
    return DocumentPlace(match.group(1), match.group(2), int(page) if page else None)


def cited_title(title: str, page: int | None) -> str:
    """What a citation shows: the document's title and its page ("Report, p. 12")."""
    return f"{title}, p. {page}" if page else title


def found_hit(passage: FoundPassage, url: str) -> Hit:
    """A passage found as a hit: under its document's title and page, at `url`."""
    return Hit(title=cited_title(passage.title, passage.page), url=url, text=passage.text)


def passage_url(passage: FoundPassage) -> str:
    """The service's address of the document of `passage`, at its page."""
    return document_url(DocumentPlace(passage.collection_id, passage.document_id, passage.page))


def classify_store_error(error: Exception) -> ToolCallError:
    """A store that cannot answer (connection lost, pool exhausted) may answer the next try."""
    if isinstance(error, ConnectionError | OSError):
        return ToolCallError("network", retryable=True, detail=type(error).__name__)
    return ToolCallError("internal", detail=type(error).__name__)


def passage_tool(
    name: str,
    description: str,
    args_schema: type[BaseModel],
    search: Search[P],
    url: Callable[[P], str],
    runtime: ToolRuntime,
    k: int,
) -> BaseTool:
    """A tool named `name` over the store's full-text index: the best `k` passages `search`
    finds, as the model reads them (each under its title and page) and as evidence at
    `url(passage)`; `description` is formatted with `k`. Nothing is cached: a document added
    or deleted is found, or not, by the next search; and a store that failed once is asked
    again by the next search (never marked down for a while)."""
    runtime = replace(runtime, name=name, cache_ttl_s=0.0, down_s=0.0)

    async def fetch(query: str) -> ToolResult:
        hits = [found_hit(passage, url(passage)) for passage in await search(query, k)]
        return render_hits(name, query, hits, runtime.max_chars)

    return runtime.async_query_tool(
        description.format(k=k), args_schema, fetch, classify_store_error
    )


def build_documents(
    search: PassageSearch, runtime: ToolRuntime, *, k: int = MAX_PASSAGES
) -> BaseTool:
    """The `documents` tool of one run, searching through `search` under `runtime`
    (`passage_tool`: nothing cached, a failed store asked again by the next search)."""
    return passage_tool(NAME, DESCRIPTION, DocumentsInput, search, passage_url, runtime, k)
