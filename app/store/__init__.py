"""Opens the configured backend: the run store plus the LangGraph checkpointer beside it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.settings import Settings
from app.store.base import RunStore
from app.store.sqlite import BUSY_TIMEOUT_MS, SqliteRunStore

logger = logging.getLogger(__name__)


@asynccontextmanager
async def open_backend(
    settings: Settings,
) -> AsyncIterator[tuple[RunStore, BaseCheckpointSaver[str]]]:
    """Postgres when `database_url` is set, else SQLite files under `data_dir`."""
    if settings.database_url:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from app.store.postgres import PostgresRunStore

        pg_store = await PostgresRunStore.open(settings.database_url)
        try:
            async with AsyncPostgresSaver.from_conn_string(settings.database_url) as saver:
                await saver.setup()
                logger.info("store: postgres")
                yield pg_store, saver
        finally:
            await pg_store.close()
        return
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    conn = await aiosqlite.connect(settings.data_dir / "checkpoints.sqlite")
    try:
        await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # WAL (set by the saver) with NORMAL sync: a commit survives a process crash (SIGKILL);
        # only an OS crash could lose the last ones.
        await conn.execute("PRAGMA synchronous=NORMAL")
        sqlite_saver = AsyncSqliteSaver(conn)
        await sqlite_saver.setup()
        logger.info("store: sqlite in %s", settings.data_dir)
        yield store, sqlite_saver
    finally:
        await conn.close()
        await store.close()
