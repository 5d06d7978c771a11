"""`wikipedia`: search + article summary through the `wikipedia` package.

The package keeps its state in module globals (language, User-Agent, the `requests` module it
calls) and memoises results without bound. Every call therefore runs under one process-wide lock
that sets that state for this tool, and `set_lang` on each call also empties the package's
memo, leaving caching to our TTL cache.
"""

from __future__ import annotations

import logging
import threading
import warnings

import requests
import wikipedia
from bs4 import GuessedAtParserWarning
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.httpfetch import HttpFetcher, classify_requests_error
from tools.results import Hit, ToolResult, no_results, options_offered, render_hits
from tools.runtime import ToolCallError, ToolRuntime
from tools.settings import ToolSettings

logger = logging.getLogger(__name__)

NAME = "wikipedia"
SEARCH_RESULTS = 6
MAX_OPTIONS = 20
_LOCK = threading.Lock()

# The package parses disambiguation pages with BeautifulSoup without naming a parser; the
# warning about that says nothing actionable here, so it is silenced for that module only.
warnings.filterwarnings("ignore", category=GuessedAtParserWarning, module=r"wikipedia\.wikipedia")


class WikipediaInput(BaseModel):
    """Arguments of `wikipedia`."""

    query: str = Field(
        description="A topic or an article title, e.g. 'Monte Carlo tree search' or "
        "'Mercury (planet)'."
    )


def classify_wikipedia_error(exc: Exception) -> ToolCallError:
    """Map an exception from `wikipedia` (or the `requests` under it) to a failure kind."""
    if isinstance(exc, wikipedia.exceptions.HTTPTimeoutError):
        # The API's own "HTTP request timed out" / "Pool queue is full": overloaded for now.
        return ToolCallError("timeout", retryable=True, detail="Wikipedia API timeout")
    transport = classify_requests_error(exc)
    if transport is not None:
        return transport
    if isinstance(exc, wikipedia.exceptions.WikipediaException):
        return ToolCallError("http_error", detail="Wikipedia API error")
    # The package indexes into the JSON without checks (and asserts on redirects).
    if isinstance(exc, KeyError | IndexError | TypeError | ValueError | AssertionError):
        return ToolCallError("bad_response", detail=type(exc).__name__)
    return ToolCallError("internal", detail=type(exc).__name__)


def build_wikipedia(
    settings: ToolSettings, runtime: ToolRuntime, session: requests.Session
) -> BaseTool:
    """The `wikipedia` tool; its HTTP goes through `session` (tests serve JSON with `responses`)."""
    # `wikipedia`'s only HTTP call is `requests.get(API_URL, params=..., headers=...)`, with
    # no timeout, no status check, over plain http (which Wikimedia redirects): the fetcher
    # stands in for its `requests` module.
    transport = HttpFetcher(session, timeout_s=settings.tool_timeout_s, https_only=True)
    lang = settings.wikipedia_lang
    user_agent = settings.wikipedia_user_agent

    def fetch(query: str) -> ToolResult:
        with _LOCK:
            module = wikipedia.wikipedia
            saved_requests = module.requests
            wikipedia.set_user_agent(user_agent)
            wikipedia.set_lang(lang)
            module.requests = transport
            try:
                return _lookup(query, runtime.max_chars)
            finally:
                module.requests = saved_requests

    return runtime.query_tool(
        (
            f"Look a topic up in Wikipedia ({lang}). Use it for definitions, background, history, "
            "people, places, organisations and well-established facts. Input: a topic or an "
            "article title. Returns the summary of the best-matching article with its URL and "
            "the titles of other matching articles; for an ambiguous title it returns the "
            "options, so call it again with the exact title you mean."
        ),
        WikipediaInput,
        fetch,
        classify_wikipedia_error,
    )


def _lookup(query: str, max_chars: int) -> ToolResult:
    """Search, then summarise the best match (call with the package's globals set)."""
    titles: list[str] = wikipedia.search(query, results=SEARCH_RESULTS)
    if not titles:
        return no_results(NAME, query)
    # The search index can list a page that is gone: then the next hit is tried once.
    for title in titles[:2]:
        try:
            # auto_suggest would replace our exact search hit with the API's spelling suggestion.
            page = wikipedia.page(title, auto_suggest=False, redirect=True)
        except wikipedia.exceptions.PageError:
            logger.info("wikipedia: search hit %r has no page", title)
            continue
        except wikipedia.exceptions.DisambiguationError as exc:
            options = [str(option) for option in exc.options if str(option).strip()]
            others = [other for other in titles if other != title and other not in options]
            return options_offered(NAME, query, (options + others)[:MAX_OPTIONS], max_chars)
        others = [other for other in titles if other not in (title, page.title)]
        footer = f"Other matching articles: {'; '.join(others)}" if others else ""
        hit = Hit(title=page.title, url=page.url, text=page.summary)
        return render_hits(NAME, query, [hit], max_chars, footer=footer)
    return no_results(NAME, query)
