"""The run service as one unit: backend, engine, signals and run manager, opened and closed
together. The HTTP app's lifespan and the worker-only process both use it.

With Postgres or Redis configured, what the processes of a deployment must agree on is shared
through them: wake-ups and cancel signals (Redis pub/sub, else the backend's own channel),
the model-call cache (Redis, else Postgres), and the bound on waiting runs (counted in the
store, app/runs/queue.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from langchain_core.tools import BaseTool

from agents.engine import Engine
from app import startup
from app.heap import freeze_startup_heap
from app.runs.commands import SignalledCommands
from app.runs.manager import RunManager
from app.runs.queue import RunQueue
from app.runs.signals import LocalSignals, PostgresSignals, SqliteSignals
from app.settings import Settings
from app.store.backend import open_backend
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore
from calls.cache import CacheStore
from calls.models import ModelFactory

# How often a process looks whether another one wrote to a shared SQLite file.
SQLITE_WATCH_S = 0.1


def make_signals(settings: Settings, store: RunStore) -> LocalSignals:
    """Wake-ups across processes: Redis when configured, else through the backend in use."""
    if settings.redis_url:
        from app.backends.signals_redis import RedisSignals

        return RedisSignals(settings.redis_url, redis=startup.redis(settings))
    if settings.database_url:
        return PostgresSignals(settings.database_url)
    if isinstance(store, SqliteRunStore):
        return SqliteSignals(store.data_version, SQLITE_WATCH_S)
    return LocalSignals()


@asynccontextmanager
async def shared_cache(settings: Settings) -> AsyncIterator[CacheStore | None]:
    """The model-call cache every process of the deployment shares: Redis, else Postgres;
    None (the engine's own: in memory, or `cache_path`) when neither is configured or a cache
    file is set explicitly."""
    store: CacheStore | None = None
    if settings.cache_path is None and settings.redis_url:
        from app.backends.cache_redis import RedisCacheStore

        store = RedisCacheStore(settings.redis_url, redis=startup.redis(settings))
    elif settings.cache_path is None and settings.database_url:
        from app.backends.cache_postgres import PostgresCacheStore

        store = PostgresCacheStore(settings.database_url)
    try:
        yield store
    finally:
        aclose = getattr(store, "aclose", None)
        if aclose is not None:
            await aclose()
        close = getattr(store, "close", None)
        if close is not None:
            close()


@asynccontextmanager
async def run_service(
    settings: Settings,
    *,
    models: ModelFactory,
    tools: Sequence[BaseTool],
    worker: bool = True,
    queue: RunQueue | None = None,
) -> AsyncIterator[RunManager]:
    """A started run manager; on exit its runs are drained and everything is closed.
    `queue` replaces the in-process run queue built from the settings."""
    async with (
        open_backend(settings) as (store, checkpointer),
        shared_cache(settings) as cache,
        startup.local_docs(settings, store.collections),  # the folder loaded before serving
    ):
        engine = Engine(
            settings=settings,
            models=models,
            tools=tools,
            checkpointer=checkpointer,
            cache=cache,
            commands=SignalledCommands(store.commands),  # commands wait in the run store
        )
        manager = RunManager(
            engine=engine,
            store=store,
            settings=settings,
            checkpointer=checkpointer,
            signals=make_signals(settings, store),
            worker=worker,
            queue=queue,
        )
        await manager.start()
        freeze_startup_heap()  # everything built so far lives as long as the process
        try:
            yield manager
        finally:
            await manager.stop()
