"""The run service as one unit: backend, engine, signals and run manager, opened and closed
together. The HTTP app's lifespan and the worker-only process both use it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from langchain_core.tools import BaseTool

from agents.engine import Engine
from agents.models import ModelFactory
from agents.settings import Settings
from app.heap import freeze_startup_heap
from app.manager import RunManager
from app.queue import RunQueue
from app.signals import LocalSignals, PostgresSignals, SqliteSignals
from app.store import open_backend
from app.store.base import RunStore
from app.store.sqlite import SqliteRunStore

logger = logging.getLogger(__name__)
# How often a process looks whether another one wrote to a shared SQLite file.
SQLITE_WATCH_S = 0.1


def make_signals(settings: Settings, store: RunStore) -> LocalSignals:
    """Wake-ups across processes through the backend in use."""
    if settings.database_url:
        return PostgresSignals(settings.database_url)
    if isinstance(store, SqliteRunStore):
        return SqliteSignals(store.data_version, SQLITE_WATCH_S)
    return LocalSignals()


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
    async with open_backend(settings) as (store, checkpointer):
        engine = Engine(settings=settings, models=models, tools=tools, checkpointer=checkpointer)
        signals = make_signals(settings, store)
        manager = RunManager(
            engine=engine,
            store=store,
            settings=settings,
            checkpointer=checkpointer,
            signals=signals,
            worker=worker,
            queue=queue,
        )
        if isinstance(signals, SqliteSignals):
            signals.check_cancels = manager.check_cancels
        await manager.start()
        freeze_startup_heap()  # everything built so far lives as long as the process
        try:
            yield manager
        finally:
            await manager.stop()
