"""`web_search`: the public web through `ddgs` (DuckDuckGo only unless configured otherwise)."""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol

from ddgs import DDGS
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from calls.errors import ConfigError
from calls.sources import SOURCE_FILTER
from tools.results import Hit, ToolResult, no_results, render_hits
from tools.runtime import ToolCallError, ToolRuntime
from tools.settings import ToolSettings

logger = logging.getLogger(__name__)

NAME = "web_search"
_NO_RESULTS = "No results found"
# Words in ddgs's error text (it wraps every engine failure in a DDGSException) and their kinds.
_NETWORK_MARKERS = ("dnserror", "connecterror", "connection", "resolve")
_TIMEOUT_MARKERS = ("timed out", "timeout")
_RATE_LIMIT_MARKERS = ("ratelimit", "rate limit", "429", "too many requests")


class WebSearchFn(Protocol):
    """The network edge of `web_search`: ddgs's `DDGS().text` or a test double with its shape."""

    def __call__(
        self, query: str, *, region: str, safesearch: str, max_results: int, backend: str
    ) -> list[dict[str, Any]]:
        """Search results as dicts with "title", "href" and "body"."""
        ...


class WebSearchInput(BaseModel):
    """Arguments of `web_search`."""

    query: str = Field(
        description="A short keyword query, as typed into a search engine, e.g. "
        "'LangGraph checkpointer postgres'."
    )


def ddgs_search_fn(timeout_s: float) -> WebSearchFn:
    """The real search: a fresh `DDGS` per call (its engine cache is not meant for threads)."""
    # ddgs takes whole seconds; its own timeout keeps an abandoned worker thread short-lived.
    ddgs_timeout = max(1, math.ceil(timeout_s))

    def search(
        query: str, *, region: str, safesearch: str, max_results: int, backend: str
    ) -> list[dict[str, Any]]:
        return DDGS(timeout=ddgs_timeout).text(
            query, region=region, safesearch=safesearch, max_results=max_results, backend=backend
        )

    return search


def check_backend(backend: str) -> None:
    """Refuse backend names ddgs does not know: it would silently fall back to every engine."""
    from ddgs.engines import ENGINES  # imports every engine module: only at start-up

    known = set(ENGINES["text"]) | {"auto", "all"}
    names = [part.strip() for part in backend.split(",")]
    unknown = sorted(name for name in names if name not in known)
    if unknown or not any(names):
        listed = ", ".join(unknown) or "(empty)"
        raise ConfigError(
            f"web_search_backend {backend!r}: unknown ddgs backend(s) {listed}; "
            f"known: {', '.join(sorted(known))}"
        )


def classify_ddgs_error(exc: Exception) -> ToolCallError:
    """Map a ddgs exception to a failure kind; ddgs reports most failures only as text."""
    if isinstance(exc, RatelimitException):
        return ToolCallError("rate_limited", retryable=True, detail="ddgs rate limit")
    if isinstance(exc, TimeoutException):
        return ToolCallError("timeout", retryable=True, detail="ddgs timeout")
    if isinstance(exc, DDGSException):
        text = str(exc).lower()
        if any(marker in text for marker in _RATE_LIMIT_MARKERS):
            return ToolCallError("rate_limited", retryable=True, detail="search engine rate limit")
        if any(marker in text for marker in _TIMEOUT_MARKERS):
            return ToolCallError("timeout", retryable=True, detail="search engine timeout")
        if any(marker in text for marker in _NETWORK_MARKERS):
            return ToolCallError("network", detail="search engine unreachable")
        return ToolCallError("http_error", detail="search engine error")
    return ToolCallError("internal", detail=type(exc).__name__)


def parse_results(raw: object) -> list[Hit]:
    """ddgs result dicts as hits; entries without a usable http(s) link are skipped.

    Raises `ToolCallError("bad_response")` when there were entries but none was usable.
    """
    if not isinstance(raw, list):
        raise ToolCallError("bad_response", detail=f"results are a {type(raw).__name__}")
    hits: list[Hit] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        url, title, body = item.get("href"), item.get("title"), item.get("body")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            continue
        hits.append(
            Hit(
                title=title if isinstance(title, str) and title.strip() else url,
                url=url,
                text=body if isinstance(body, str) else "",
            )
        )
    if raw and not hits:
        raise ToolCallError("bad_response", detail="no result had a link")
    return hits


def build_web_search(
    settings: ToolSettings, runtime: ToolRuntime, search_fn: WebSearchFn | None = None
) -> BaseTool:
    """The `web_search` tool; `search_fn` replaces the real ddgs call (tests, bench)."""
    search = search_fn or ddgs_search_fn(settings.tool_timeout_s)
    max_results = settings.web_search_max_results

    def fetch(query: str) -> ToolResult:
        try:
            raw = search(
                query,
                region=settings.web_search_region,
                safesearch=settings.web_search_safesearch,
                max_results=max_results,
                backend=settings.web_search_backend,
            )
        except DDGSException as exc:
            # ddgs says "No results found." both for a real empty page and when every engine
            # answered with a non-200 status; the two cannot be told apart from here.
            if _NO_RESULTS.lower() in str(exc).lower() and not isinstance(
                exc, RatelimitException | TimeoutException
            ):
                return no_results(NAME, query)
            raise
        hits = parse_results(raw)
        sources = SOURCE_FILTER.get()
        if sources is not None:
            hits = [hit for hit in hits if sources.allows(hit.url)]
        return render_hits(NAME, query, hits[:max_results], runtime.max_chars)

    return runtime.query_tool(
        (
            "Search the public web (DuckDuckGo). Use it for current events, companies, products, "
            "software, people, and any fact the other tools do not cover. Input: a short keyword "
            f"query. Returns up to {max_results} results, each with a title, its URL and a short "
            "snippet; snippets can be incomplete, so cite the URL and verify key claims."
        ),
        WebSearchInput,
        fetch,
        classify_ddgs_error,
    )
