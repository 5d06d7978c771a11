"""`arxiv`: papers from the arXiv API through `arxiv.Client` (the 4.x API)."""

from __future__ import annotations

import logging
import re
from typing import Any
from xml.etree import ElementTree

import arxiv
import requests
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.httpfetch import HttpFetcher, classify_requests_error, status_error
from tools.results import Hit, ToolResult, render_hits
from tools.runtime import ToolCallError, ToolRuntime
from tools.settings import ToolSettings

logger = logging.getLogger(__name__)

NAME = "arxiv"
# arXiv's API terms ask for no more than one request every three seconds, whatever the settings.
MIN_INTERVAL_S = 3.0
_ATOM_FEED = "{http://www.w3.org/2005/Atom}feed"
_MAX_AUTHORS = 5
# New-style ids (2401.01234v2) and old-style ones (hep-th/9901001), optionally "arXiv:"-prefixed.
_ARXIV_ID = re.compile(
    r"^(?:arxiv:)?(\d{4}\.\d{4,5}(?:v\d+)?|[a-z][a-z.\-]*/\d{7}(?:v\d+)?)$", re.IGNORECASE
)


class ArxivInput(BaseModel):
    """Arguments of `arxiv`."""

    query: str = Field(
        description="Keywords (e.g. 'tree of thoughts language models'), arXiv query syntax "
        "(ti:, au:, abs:, cat:, AND, OR), or an arXiv id such as 2305.10601."
    )


def require_atom_feed(response: requests.Response) -> None:
    """Refuse a 2xx body that is not an Atom feed: arxiv would read it as "no results"."""
    try:
        root = ElementTree.fromstring(response.content)
    except ElementTree.ParseError as exc:
        raise ToolCallError("bad_response", detail="body is not XML") from exc
    if root.tag != _ATOM_FEED:
        raise ToolCallError("bad_response", detail=f"root element is {root.tag[:80]!r}")


def classify_arxiv_error(exc: Exception) -> ToolCallError:
    """Map an exception from `arxiv` (or the `requests` under it) to a failure kind."""
    if isinstance(exc, arxiv.HTTPError):
        return status_error(exc.status)
    if isinstance(exc, arxiv.UnexpectedEmptyPageError):
        return ToolCallError("bad_response", retryable=True, detail="unexpected empty page")
    transport = classify_requests_error(exc)
    if transport is not None:
        return transport
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):
        return ToolCallError("bad_response", detail=type(exc).__name__)
    return ToolCallError("internal", detail=type(exc).__name__)


def to_hit(result: Any) -> Hit:
    """One `arxiv.Result` as a hit: abstract as text; authors, dates, category, links as meta."""
    names = [author.name for author in result.authors]
    authors = ", ".join(names[:_MAX_AUTHORS]) + (" et al." if len(names) > _MAX_AUTHORS else "")
    published = result.published.date().isoformat()
    updated = result.updated.date().isoformat()
    dates = f"published {published}" + (f", updated {updated}" if updated != published else "")
    parts = [f"Authors: {authors or 'unknown'}", dates]
    if result.primary_category:
        parts.append(f"category {result.primary_category}")
    if result.pdf_url:
        parts.append(f"PDF: {_https(result.pdf_url)}")
    return Hit(
        title=result.title, url=_https(result.entry_id), text=result.summary, meta="; ".join(parts)
    )


def _https(url: str) -> str:
    # The API lists http:// links; arxiv.org serves (and redirects to) https.
    return "https://" + url.removeprefix("http://") if url.startswith("http://arxiv.org/") else url


def build_search(query: str, max_results: int) -> Any:
    """An `arxiv.Search` for `query`: by id when it is an arXiv id, else a query."""
    match = _ARXIV_ID.match(query)
    if match:
        return arxiv.Search(id_list=[match.group(1)], max_results=max_results)
    return arxiv.Search(query=query, max_results=max_results)


def build_arxiv(
    settings: ToolSettings, runtime: ToolRuntime, session: requests.Session
) -> BaseTool:
    """The `arxiv` tool; its HTTP goes through `session` (tests serve Atom XML with `responses`)."""
    max_results = settings.arxiv_max_results
    fetcher = HttpFetcher(session, timeout_s=settings.tool_timeout_s, check_body=require_atom_feed)

    def fetch(query: str) -> ToolResult:
        # One page of exactly the results wanted; no retries or delays inside the library:
        # ToolRuntime retries only what is retryable and spaces the calls.
        client = arxiv.Client(page_size=max_results, delay_seconds=0.0, num_retries=0)
        # arxiv 4 has no timeout or session parameter; its `_session` (only `.get` is used) is
        # the one seam through which timeouts and status handling can be added.
        client._session = fetcher
        results = list(client.results(build_search(query, max_results)))
        return render_hits(NAME, query, [to_hit(r) for r in results], runtime.max_chars)

    return runtime.query_tool(
        (
            "Search arXiv for scientific papers and preprints (computer science, AI, physics, "
            "mathematics, statistics, quantitative biology and finance, economics). Use it for "
            "research literature, methods and benchmark results. Input: keywords, arXiv query "
            "syntax (ti:, au:, abs:, cat:) or an arXiv id. Returns up to "
            f"{max_results} papers with title, authors, dates, abstract, and abstract/PDF links."
        ),
        ArxivInput,
        fetch,
        classify_arxiv_error,
    )
