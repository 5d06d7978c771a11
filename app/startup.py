"""What every entry point builds from the settings before it serves, once per process: the model
factory (its limiters shared through Redis when the deployment has one) and the research tools
(their limiters likewise). Both are checked as they are built, so a misconfiguration fails here
with a `ConfigError`, before anything listens or runs. The process's Redis adapter is made here
too, its outages reported to the metrics, and handed to every user of that Redis. Once the store
is open, `local_docs` loads the `local_docs` tool's folder into it (app/collections/local_folder.py)
and binds the tool's search to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langchain_core.tools import BaseTool

from app.backends.model_limiter_redis import redis_model_limiters
from app.backends.redis import SharedRedis, shared_redis
from app.backends.tool_limiter_redis import redis_limiters
from app.collections.folder_search import folder_loaded, loaded_folder
from app.collections.intake import DocumentIntake
from app.observability.metrics import PrometheusHealth
from app.settings import Settings
from app.store.backend import open_backend
from app.store.protocols import Collections
from calls.models import SettingsModelFactory
from calls.ratelimit import LimiterSource, model_limiter
from tools import local_docs as local_docs_tool
from tools import mcp
from tools.local_docs import FolderSearch
from tools.registry import build_tools
from tools.runtime import ToolLimiters


def redis(settings: Settings) -> SharedRedis | None:
    """The process's adapter for the deployment's Redis (None without one), its outages
    reported to the metrics."""
    if not settings.redis_url:
        return None
    return shared_redis(settings.redis_url, observer=PrometheusHealth)


def model_limiters(settings: Settings) -> LimiterSource:
    """The models' limiters: shared through Redis when the deployment has one, else the
    process's own."""
    if not settings.redis_url:
        return model_limiter
    return redis_model_limiters(
        settings.redis_url, call_timeout_s=settings.model_timeout_s, redis=redis(settings)
    )


def model_factory(settings: Settings) -> SettingsModelFactory:
    """Every role's model built now (so a bad model string or a missing key fails here)."""
    factory = SettingsModelFactory(settings, limiters=model_limiters(settings))
    factory.check()
    return factory


def tool_limiters(settings: Settings) -> ToolLimiters | None:
    """The tools' rate limiters shared through Redis, or None for the process-wide ones."""
    if not settings.redis_url:
        return None
    return redis_limiters(settings.redis_url, redis=redis(settings))


def research_tools(settings: Settings) -> list[BaseTool]:
    """The enabled built-in tools (MCP servers' tools are loaded by `mcp_tools`, on the
    service's event loop); `local_docs` searches its folder once `local_docs` loaded it."""
    return build_tools(
        settings, limiters=tool_limiters(settings), folder_search=folder_search(settings)
    )


def folder_search(settings: Settings) -> FolderSearch | None:
    """The `local_docs` tool's search over its folder's collection (None without a folder)."""
    folder = settings.local_docs_dir
    return None if folder is None else loaded_folder(folder).search


@asynccontextmanager
async def local_docs(settings: Settings, collections: Collections) -> AsyncIterator[None]:
    """With `local_docs` enabled, its folder loaded into `collections` (before the process
    serves) and the tool's search bound to them for as long as the block runs; else nothing.
    Raises `ConfigError` when the folder is not there."""
    folder = settings.local_docs_dir
    if folder is None or local_docs_tool.NAME not in settings.tools:
        yield
        return
    reader = DocumentIntake.from_settings(settings).reader
    concurrency = settings.document_readers
    async with folder_loaded(folder, collections, reader, concurrency=concurrency):
        yield


async def mcp_tools(settings: Settings) -> list[BaseTool]:
    """The tools of the MCP servers in `settings.mcp_servers` (none when unset)."""
    if not settings.mcp_servers:
        return []
    servers = mcp.parse_servers(settings.mcp_servers)
    return await mcp.load_mcp_tools(
        servers, timeout_s=settings.tool_timeout_s, max_chars=settings.tool_result_max_chars
    )


@asynccontextmanager
async def local_docs_alone(settings: Settings) -> AsyncIterator[None]:
    """`local_docs` for a process without a run service (`lats solve` without a server): the
    store opened only to load the folder and search it; nothing when the tool is off."""
    if settings.local_docs_dir is None or local_docs_tool.NAME not in settings.tools:
        yield
        return
    async with open_backend(settings) as (store, _), local_docs(settings, store.collections):
        yield
