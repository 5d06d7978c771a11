"""The embedded store: one SQLite file in WAL mode, its parts on the connections they share
(app/store/sqlite/db.py). Several processes may share the file: writes are `BEGIN IMMEDIATE`
transactions (the write lock is taken up front, so the busy timeout applies and no transaction
has to upgrade a read lock), batched by `BatchWriter` (group commit); leases are wall-clock
seconds (one machine)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite

from app.store.collection_base import CollectionLimits
from app.store.disk import DiskSpace
from app.store.sqlite.assistants import SqliteAssistants
from app.store.sqlite.collections import SqliteCollections
from app.store.sqlite.commands import SqliteCommands
from app.store.sqlite.db import BUSY_TIMEOUT_MS, SEARCHERS, SqliteDb, searcher
from app.store.sqlite.deliveries import SqliteDeliveries
from app.store.sqlite.events import SqliteEvents
from app.store.sqlite.leases import SqliteLeases
from app.store.sqlite.library import without_memory_statistics
from app.store.sqlite.runs import SqliteRuns
from app.store.sqlite.schema import migrate
from app.store.sqlite.search_processes import PROCESSES, SearchProcesses
from app.store.sqlite.threads import SqliteThreads
from app.store.sqlite.waits import SqliteWaits
from app.store.sqlite_writer import BatchWriter


class SqliteRunStore:
    """`RunStore` on SQLite."""

    def __init__(self, db: SqliteDb, collection_limits: CollectionLimits | None = None) -> None:
        self._db = db
        self.runs = SqliteRuns(db)
        self.events = SqliteEvents(db)
        self.leases = SqliteLeases(db)
        self.waits = SqliteWaits(db)
        self.commands = SqliteCommands(db)
        self.threads = SqliteThreads(db)
        self.deliveries = SqliteDeliveries(db)
        self.collections = SqliteCollections(db, collection_limits)
        self.assistants = SqliteAssistants(db)

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        reserve_bytes: int | None = None,
        collection_limits: CollectionLimits | None = None,
        search_processes: int = PROCESSES,
    ) -> SqliteRunStore:
        """The store in the SQLite file `path`; with `reserve_bytes`, a reserve of that many
        bytes is kept beside it for a full disk (app/store/disk.py); its collections held to
        `collection_limits` (the defaults without); its full-text searches run in
        `search_processes` processes of their own once the first search has started them (none:
        on its own connections; app/store/sqlite/search_processes.py)."""
        without_memory_statistics()
        path.parent.mkdir(parents=True, exist_ok=True)
        disk = DiskSpace(path.parent, reserve_bytes) if reserve_bytes is not None else None
        if disk is not None:
            disk.open()
        writer = await BatchWriter.open(path, BUSY_TIMEOUT_MS)
        reader: aiosqlite.Connection | None = None
        searchers: list[sqlite3.Connection] = []
        try:
            await writer.write(migrate)
            reader = await aiosqlite.connect(path, isolation_level=None)
            reader.row_factory = aiosqlite.Row
            await reader.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            for _ in range(SEARCHERS):
                searchers.append(searcher(path))
        except BaseException:
            for conn in searchers:
                conn.close()
            if reader is not None:
                await reader.close()
            await writer.close()
            raise
        processes = SearchProcesses(path, search_processes) if search_processes > 0 else None
        db = SqliteDb(writer, reader, searchers, disk, processes)
        return cls(db, collection_limits)

    @property
    def disk(self) -> DiskSpace | None:
        """The reserve kept for a full disk, if any."""
        return self._db.disk

    @property
    def search_processes(self) -> SearchProcesses | None:
        """The processes its full-text searches run in, if it has any."""
        return self._db.processes

    async def data_version(self) -> int:
        """Changes whenever another connection (another process) commits to the file. Asked of
        the writing connection: this process's own commits do not change it there."""

        def read(conn: sqlite3.Connection) -> int:
            return int(conn.execute("PRAGMA data_version").fetchone()[0])

        return await self._db.read_writer(read)

    async def ping(self) -> None:
        await self._db.one("SELECT 1 AS n", ())

    async def close(self) -> None:
        await self._db.close()
