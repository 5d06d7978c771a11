"""The embedded store's connections to its one SQLite file, which its parts share: writes go
through one `BatchWriter` (group commit on its own connection, under the full-disk rules of
app/store/disk.py); reads through a second connection, which in WAL mode never waits for them;
full-text searches in processes of their own (app/store/sqlite/search_processes.py) or, until
one is ready, through connections of their own here (`SEARCHERS`), so that a long search holds
up neither the other reads nor more than its share of the searches: they are lent in the order
searches ask for them (`Lender`). With the helpers the parts' writes share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from agents.result import RunResult
from app.store.base import RunRecord, WebhookDelivery
from app.store.disk import DiskSpace, WriteKind
from app.store.index_sql import IndexSql, Plan
from app.store.passage_index import SearchQuery, search
from app.store.reads import OPEN_SQL, Dialect, Row, run_record
from app.store.sqlite.lender import Lender
from app.store.sqlite.search_processes import SearchProcesses
from app.store.sqlite_writer import BatchWriter

BUSY_TIMEOUT_MS = 30_000
SEARCHERS = 3
"""Connections for full-text searches in threads (while no search process is ready,
app/store/sqlite/search_processes.py): as many searches run at once; more wait for one, first
come first served. One more than a small machine's 2 cores: a search holds the interpreter's
lock only part of its time: at 8 concurrent searches over 100,000 passages (the questions of
docs/benchmarks.md §17), 3 connections gave a p50 of 14.7 ms against 17.0 with 2, and 4 or 8
no better than 3."""
SEARCH_MMAP_BYTES = 256 * 1024 * 1024
"""How much of the file the reading connections map into memory (`PRAGMA mmap_size`): a search
then reads the index's pages where they lie instead of copying each into SQLite's cache, about a
quarter less CPU a search (docs/benchmarks.md §17). The pages are the OS's page cache, counted
in the process's resident memory while mapped."""
T = TypeVar("T")

OPEN = OPEN_SQL
ENDED = "status IN ('done', 'failed', 'cancelled')"  # base.FINISHED


class SqliteDb:
    """The writing and the reading connection of one store file, and its disk's reserve."""

    dialect = Dialect.named("", same="IS", no_limit=-1)

    def __init__(
        self,
        writer: BatchWriter,
        reader: aiosqlite.Connection,
        searchers: Sequence[sqlite3.Connection],
        disk: DiskSpace | None = None,
        processes: SearchProcesses | None = None,
    ) -> None:
        """`searchers`: connections of their own for full-text searches (at least one), on
        which searches run while no search process is ready (`processes`), or with none."""
        if not searchers:
            raise ValueError("a store needs a connection to search on")
        self._writer = writer
        self._reader = reader
        self.disk = disk
        self._searchers = list(searchers)
        self._free = Lender(self._searchers)
        self.processes = processes

    @contextlib.asynccontextmanager
    async def searching(self) -> AsyncIterator[sqlite3.Connection]:
        """One of the searchers, lent until the block ends: a search, which can take a while,
        runs on one side by side with the others, and never holds up the store's other reads
        (the reading connection's)."""
        searcher = await self._free.borrow()
        try:
            yield searcher
        finally:
            self._free.give_back(searcher)

    async def search(self, query: SearchQuery) -> list[dict[str, Any]]:
        """A full-text search (app/store/passage_index.py `search`): in a search process when
        one is ready (app/store/sqlite/search_processes.py), else on a searcher here. Both run
        the same steps on the same file, so they find the same passages."""
        if self.processes is not None:
            found = await self.processes.search(query)
            if found is not None:
                return found
        return await self.search_here(search(INDEX, query))

    async def search_here(self, plan: Plan[T]) -> T:
        """A search's steps run on a searcher, in one trip to a thread and one read transaction
        (every step reads the same snapshot of the file). A caller cancelled meanwhile stops
        waiting; the searcher is lent again once the steps are done."""
        searcher = await self._free.borrow()
        try:
            work = asyncio.ensure_future(asyncio.to_thread(read_plan, searcher, plan))
        except BaseException:
            self._free.give_back(searcher)
            raise

        def done(finished: asyncio.Future[T]) -> None:
            if not finished.cancelled():
                finished.exception()  # seen, though the caller may have stopped waiting
            self._free.give_back(searcher)

        work.add_done_callback(done)
        return await asyncio.shield(work)

    async def write(self, write: Callable[[sqlite3.Connection], T], kind: WriteKind = "other") -> T:
        """`write` through the batch writer, under the full-disk rules (`DiskSpace.write`)."""
        if self.disk is None:
            return await self._writer.write(write)
        return await self.disk.write(lambda: self._writer.write(write), kind)

    async def read_writer(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """`read` on the writing connection, between two batches."""
        return await self._writer.read(read)

    async def one(self, sql: str, args: tuple[Any, ...]) -> aiosqlite.Row | None:
        # One trip to the reading connection's thread (a cursor would take three).
        rows = await self._reader.execute_fetchall(sql, args)
        return next(iter(rows), None)

    async def all(self, sql: str, args: tuple[Any, ...]) -> list[aiosqlite.Row]:
        return list(await self._reader.execute_fetchall(sql, args))

    def record(self, row: Row) -> RunRecord:
        # SQLite keeps JSON and times as text, and booleans as integers.
        return run_record(
            row,
            params=json.loads(row["params"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
            result=RunResult.model_validate_json(row["result"]) if row["result"] else None,
            answer=json.loads(row["answer"]) if row["answer"] else None,
            cancel_requested=bool(row["cancel_requested"]),
            delivery=(
                WebhookDelivery.model_validate_json(row["delivery"]) if row["delivery"] else None
            ),
        )

    async def close(self) -> None:
        """Close the connections, the searchers once the searches in flight are done with
        them (waiting at most the busy timeout). A search asked for later fails as on any
        closed connection."""
        try:
            if self.processes is not None:
                await self.processes.close()
            await self._writer.close()
        finally:
            await self._reader.close()
            held = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BUSY_TIMEOUT_MS / 1000):
                    for _ in self._searchers:
                        held.append(await self._free.borrow())
            for searcher in self._searchers:
                searcher.close()
            for searcher in held:
                self._free.give_back(searcher)


INDEX = IndexSql.of(SqliteDb.dialect)
"""The full-text index's statements on SQLite (app/store/index_sql.py)."""


def searcher(path: Path) -> sqlite3.Connection:
    """A connection for searches, used by one thread at a time, reading the file's pages where
    they are mapped (`SEARCH_MMAP_BYTES`)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA mmap_size={SEARCH_MMAP_BYTES}")
    return conn


def now() -> str:
    """The time as the store writes it."""
    return datetime.now(UTC).isoformat()


def row(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
    """The first row of `sql` inside a write, or None."""
    found: sqlite3.Row | None = conn.execute(sql, args).fetchone()
    return found


def run_plan(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run a plan's steps (app/store/index_sql.py) on `conn`, in its caller's transaction."""
    try:
        step = next(plan)
        while True:
            if step.rows is not None:
                conn.executemany(step.sql, step.rows)
                step = plan.send([])
            else:
                step = plan.send(conn.execute(step.sql, step.args).fetchall())
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def read_plan(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run a plan that only reads on `conn`, in a read transaction of its own (one snapshot of
    the file for all its steps)."""
    conn.execute("BEGIN")
    try:
        return run_plan(conn, plan)
    finally:
        conn.execute("COMMIT")  # it wrote nothing: this only ends the snapshot


def marks(values: list[Any]) -> str:
    """The placeholders of an `IN (…)` of `values`."""
    return ", ".join("?" for _ in values)
