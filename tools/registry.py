"""`build_tools`: the enabled research tools for a process's settings."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests
from langchain_core.tools import BaseTool

from calls.errors import ConfigError
from tools import arxiv_search, local_docs, mcp, web_search, wikipedia_search
from tools.documents.search_tool import NAME as DOCUMENTS
from tools.documents.search_tool import PassageSearch, build_documents
from tools.results import ToolResult
from tools.runtime import (
    PROCESS_CACHE,
    PROCESS_LIMITERS,
    PROCESS_OUTAGES,
    Clock,
    Jitter,
    LimiterRegistry,
    Sleep,
    ToolLimiters,
    ToolOutages,
    ToolRuntime,
    TtlCache,
    tool_threads,
)
from tools.settings import KNOWN_TOOLS, ToolSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolOverrides:
    """The network edge and the clocks, replaceable for tests and the bench.

    Without overrides the tools use the real services, the real clock, and the rate limiters
    `build_tools` is given (else the process-wide ones) and the process-wide result cache.
    Passing `clock` or `sleep` gives the tools a fresh limiter registry and cache on that clock
    unless they are given too (a fake clock must not leak into the process-wide ones).
    """

    web_search_fn: web_search.WebSearchFn | None = None
    """Replaces `DDGS().text` (ddgs's HTTP client cannot be intercepted)."""
    http_session: requests.Session | None = None
    """Session for arxiv and wikipedia; default a new `requests.Session` per tool."""
    clock: Clock | None = None
    """Monotonic seconds, for deadlines, rate limits and cache expiry."""
    sleep: Sleep | None = None
    """Async sleep for rate-limit waits and retry backoff."""
    jitter: Jitter | None = None
    """Uniform [0, 1) scaling each backoff delay."""
    cache: TtlCache[ToolResult] | None = None


def build_tools(
    settings: ToolSettings,
    *,
    overrides: ToolOverrides | None = None,
    limiters: ToolLimiters | None = None,
    folder_search: local_docs.FolderSearch | None = None,
) -> list[BaseTool]:
    """The tools enabled in `settings.tools`, in that order.

    `limiters` spaces the tools' calls: the service passes one shared through Redis when it
    has one; by default the process-wide registry (or a fresh one on a fake clock).
    `local_docs` is built only when enabled and `settings.local_docs_dir` names a folder; it
    searches through `folder_search`, the store's search over the collection the service
    loads that folder into (app/startup.py). The names are the settings' own, checked when
    they were read (`ToolSettings`). Raises `ConfigError` for an unknown web search backend,
    or an enabled `local_docs` without an existing folder or without `folder_search`.
    """
    overrides = overrides or ToolOverrides()
    names = list(dict.fromkeys(settings.tools))  # keeps order, drops repeats
    parts = _Parts.of(settings, overrides, limiters, folder_search)
    tools = [TOOL_BUILDERS[name](parts) for name in names]
    if settings.mcp_servers:
        mcp.parse_servers(settings.mcp_servers)  # a bad setting fails here, at start-up
    logger.info("research tools enabled: %s", ", ".join(tool.name for tool in tools) or "none")
    return tools


def build_documents_tool(
    settings: ToolSettings, search: PassageSearch, *, overrides: ToolOverrides | None = None
) -> BaseTool:
    """The `documents` tool of one run, over what `search` finds (the service binds it to the
    run's tenant and collections). A query of the run's own store: no spacing, one retry."""
    parts = _Parts.of(settings, overrides or ToolOverrides(), None)
    return build_documents(
        search, parts.runtime(DOCUMENTS, scope="", min_interval_s=0.0, max_retries=1)
    )


@dataclass(frozen=True, slots=True)
class _Parts:
    """What every tool's builder draws on: the settings, the network edge and the runtime's
    shared pieces (limiters, cache, clocks)."""

    settings: ToolSettings
    overrides: ToolOverrides
    limiters: ToolLimiters
    cache: TtlCache[ToolResult]
    clock: Clock
    sleep: Sleep
    outages: ToolOutages
    folder_search: local_docs.FolderSearch | None

    @classmethod
    def of(
        cls,
        settings: ToolSettings,
        overrides: ToolOverrides,
        limiters: ToolLimiters | None,
        folder_search: local_docs.FolderSearch | None = None,
    ) -> _Parts:
        fake_time = overrides.clock is not None or overrides.sleep is not None
        clock = overrides.clock or time.monotonic
        sleep = overrides.sleep or asyncio.sleep
        if limiters is None:
            limiters = LimiterRegistry(clock=clock, sleep=sleep) if fake_time else PROCESS_LIMITERS
        # Not `or`: an empty cache is falsy (it has a length).
        cache = overrides.cache
        if cache is None:
            cache = TtlCache(clock=clock) if fake_time else PROCESS_CACHE
        outages = ToolOutages() if fake_time else PROCESS_OUTAGES
        return cls(settings, overrides, limiters, cache, clock, sleep, outages, folder_search)

    def runtime(
        self,
        name: str,
        *,
        scope: str,
        min_interval_s: float | None = None,
        max_retries: int | None = None,
        filters_sources: bool = False,
    ) -> ToolRuntime:
        """The runtime of tool `name`; spacing and retries default to the settings'."""
        settings = self.settings
        if min_interval_s is None:
            min_interval_s = settings.tool_min_interval_s
        return ToolRuntime(
            name=name,
            timeout_s=settings.tool_timeout_s,
            max_retries=settings.tool_max_retries if max_retries is None else max_retries,
            max_chars=settings.tool_result_max_chars,
            cache_ttl_s=settings.tool_cache_ttl_s,
            limiter=self.limiters.limiter(name, min_interval_s),
            cache=self.cache,
            clock=self.clock,
            sleep=self.sleep,
            jitter=self.overrides.jitter or random.random,
            scope=scope,
            # arXiv's boolean operators are upper case: "AND" and "and" are different queries.
            casefold_keys=name != arxiv_search.NAME,
            threads=tool_threads(settings.tool_max_workers),
            outages=self.outages,
            filters_sources=filters_sources,
        )

    def session(self) -> requests.Session:
        return self.overrides.http_session or requests.Session()


def _web_search(parts: _Parts) -> BaseTool:
    settings = parts.settings
    web_search.check_backend(settings.web_search_backend)
    scope = "|".join(
        [
            settings.web_search_backend,
            settings.web_search_region,
            settings.web_search_safesearch,
            str(settings.web_search_max_results),
        ]
    )
    rt = parts.runtime(web_search.NAME, scope=scope, filters_sources=True)
    return web_search.build_web_search(settings, rt, parts.overrides.web_search_fn)


def _arxiv(parts: _Parts) -> BaseTool:
    settings = parts.settings
    interval = max(settings.tool_min_interval_s, arxiv_search.MIN_INTERVAL_S)
    rt = parts.runtime(
        arxiv_search.NAME, min_interval_s=interval, scope=str(settings.arxiv_max_results)
    )
    return arxiv_search.build_arxiv(settings, rt, parts.session())


def _wikipedia(parts: _Parts) -> BaseTool:
    rt = parts.runtime(wikipedia_search.NAME, scope=parts.settings.wikipedia_lang)
    return wikipedia_search.build_wikipedia(parts.settings, rt, parts.session())


def _local_docs(parts: _Parts) -> BaseTool:
    _check_local_docs_folder(parts.settings)
    if parts.folder_search is None:
        raise ConfigError(
            "local_docs searches the collection the service loads LATS_LOCAL_DOCS_DIR into at "
            "start-up: build it with the store's search (app/startup.py: research_tools)"
        )
    # A query of the process's own store, like `documents`: no spacing, one retry.
    rt = parts.runtime(local_docs.NAME, scope="", min_interval_s=0.0, max_retries=1)
    return local_docs.build_local_docs(parts.folder_search, rt)


# One builder per tool name that settings accept (`tools.settings.KNOWN_TOOLS`, the one list of
# them), in its order; each builds the tool of that name (a unit test builds them all).
TOOL_BUILDERS: dict[str, Callable[[_Parts], BaseTool]] = dict(
    zip(KNOWN_TOOLS, (_web_search, _arxiv, _wikipedia, _local_docs), strict=True)
)


def _check_local_docs_folder(settings: ToolSettings) -> None:
    folder = settings.local_docs_dir
    if folder is None:
        raise ConfigError(
            "local_docs is enabled in LATS_TOOLS but LATS_LOCAL_DOCS_DIR is not set; "
            "set it to a folder of documents or remove local_docs from LATS_TOOLS"
        )
    if not folder.is_dir():
        raise ConfigError(
            f"LATS_LOCAL_DOCS_DIR {str(folder)!r} is not an existing folder (local_docs is enabled)"
        )
