"""Opens the configured backend: the run store plus the LangGraph checkpointer beside it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver

from app.settings import Settings
from app.store.collection_base import CollectionLimits
from app.store.protocols import RunStore
from app.store.saver_guard import GuardedWrites
from app.store.sqlite.db import BUSY_TIMEOUT_MS
from app.store.sqlite.store import SqliteRunStore
from app.store.sqlite_saver import DiskAwareSqliteSaver

logger = logging.getLogger(__name__)
SETUP_POLL_S = 0.2  # how often a starting process asks for the migrations' lock


async def _setup_once(url: str, saver: BaseCheckpointSaver[str]) -> None:
    """The checkpointer's migrations, one process at a time: processes starting together
    would otherwise race on its CREATE statements.

    The lock is polled, never waited for inside a statement: the migrations include a
    CREATE INDEX CONCURRENTLY, which waits for every statement in progress, so a process
    blocked in pg_advisory_lock() and the lock holder would wait for each other forever."""
    from psycopg import AsyncConnection

    async with await AsyncConnection.connect(url, autocommit=True) as conn:
        # Polled, not waited for: the migrations' CREATE INDEX CONCURRENTLY waits for every
        # statement running in the database, a blocked pg_advisory_lock included (a deadlock
        # Postgres does not detect).
        while True:
            cur = await conn.execute(
                "SELECT pg_try_advisory_lock(hashtext('lats_checkpoint_setup'))"
            )
            row = await cur.fetchone()
            if row is not None and row[0]:
                break
            await asyncio.sleep(SETUP_POLL_S)
        await saver.setup()  # type: ignore[attr-defined]  # the Postgres saver's, not the base's
        await conn.execute("SELECT pg_advisory_unlock(hashtext('lats_checkpoint_setup'))")


def collection_limits(settings: Settings) -> CollectionLimits:
    """What the store holds a key's documents to: the settings' bytes of a file and of all of a
    key's documents."""
    return CollectionLimits(
        max_file_bytes=settings.document_max_bytes,
        max_tenant_bytes=settings.document_key_max_bytes,
    )


@asynccontextmanager
async def open_backend(
    settings: Settings,
) -> AsyncIterator[tuple[RunStore, GuardedWrites]]:
    """Postgres when `database_url` is set, else SQLite files under `data_dir`."""
    if settings.database_url:
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from app.store import pg_check
        from app.store.outage import StoreOutage
        from app.store.patient_saver import PatientPostgresSaver
        from app.store.postgres.store import PostgresRunStore

        # With Redis carrying the wake-ups nobody listens to the store's NOTIFYs.
        notify = settings.redis_url is None
        pg_store = await PostgresRunStore.open(
            settings.database_url, notify=notify, collection_limits=collection_limits(settings)
        )
        # A pool, not the saver's default single connection: concurrent runs do not queue
        # behind one connection, and a connection whose query a cancel interrupted is
        # checked (and replaced) by the pool instead of stalling every later checkpoint.
        pool: AsyncConnectionPool[Any] = pg_check.ReconnectingPool(
            settings.database_url,
            min_size=1,
            max_size=settings.max_active_runs + 2,
            open=False,
            timeout=30,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        try:
            await pool.open(wait=True, timeout=10)
            saver = PatientPostgresSaver(pool, StoreOutage(settings.store_outage_s))
            await _setup_once(settings.database_url, saver)
            logger.info("store: postgres")
            yield pg_store, saver
        finally:
            await pool.close()
            await pg_store.close()
        return
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await SqliteRunStore.open(
        settings.data_dir / "runs.sqlite",
        reserve_bytes=settings.storage_reserve_bytes,
        collection_limits=collection_limits(settings),
    )
    conn = await aiosqlite.connect(settings.data_dir / "checkpoints.sqlite")
    try:
        await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # WAL (set by the saver) with NORMAL sync: a commit survives a process crash (SIGKILL);
        # only an OS crash could lose the last ones.
        await conn.execute("PRAGMA synchronous=NORMAL")
        assert store.disk is not None
        sqlite_saver = DiskAwareSqliteSaver(conn, store.disk)
        await sqlite_saver.setup()
        logger.info("store: sqlite in %s", settings.data_dir)
        yield store, sqlite_saver
    finally:
        await conn.close()
        await store.close()
