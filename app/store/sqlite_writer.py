"""Group commit for the SQLite store: one writer task, one connection, one thread.

Every write is a plain function of a `sqlite3.Connection` (its statements, its checks). Callers
queue them; the writer task takes all that are waiting (up to `MAX_BATCH`) and runs them on its
thread in one `BEGIN IMMEDIATE … COMMIT`, each inside its own SAVEPOINT: an item that raises
(a fencing check that fails, a constraint) is rolled back to its savepoint and fails its own
caller only. A batch is one hand-off to the thread and one commit however many writes it holds,
which is what a burst of writes (200 runs created at once) queues on.

Each caller awaits its own future through `asyncio.shield`: a cancelled caller stops waiting,
its write still runs (or rolls back) whole with its batch.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")
Write = Callable[[sqlite3.Connection], Any]

MAX_BATCH = 256


@dataclass(frozen=True)
class _Item:
    write: Write
    future: asyncio.Future[Any]


class _Stop:
    pass


class BatchWriter:
    """Serialises writes to one SQLite file through one connection, batched into transactions."""

    def __init__(self, conn: sqlite3.Connection, thread: ThreadPoolExecutor) -> None:
        self._conn = conn
        self._thread = thread  # the connection's only thread
        self._queue: asyncio.Queue[_Item | _Stop] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.commits = 0  # transactions committed (one per batch)

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int) -> BatchWriter:
        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn

        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        conn = await asyncio.get_running_loop().run_in_executor(thread, connect)
        return cls(conn, thread)

    async def write(self, write: Callable[[sqlite3.Connection], T]) -> T:
        """Run `write` inside the next batch's transaction; its result or its exception."""
        if self._closed:
            raise RuntimeError("the SQLite writer is closed")
        loop = asyncio.get_running_loop()
        if self._task is None or self._queue is None or self._task.done():
            self._queue = asyncio.Queue()
            self._task = loop.create_task(self._run(self._queue), name="sqlite-writer")
        elif self._task.get_loop() is not loop:
            # A caller on another loop (a callback run by `asyncio.run` in a worker thread)
            # queues through the writer's own loop.
            handed = asyncio.run_coroutine_threadsafe(self.write(write), self._task.get_loop())
            return await asyncio.wrap_future(handed)
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put_nowait(_Item(write, future))
        return await asyncio.shield(future)

    async def read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """Run `read` on the writer's connection between two batches (no transaction)."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, read, self._conn)

    async def close(self) -> None:
        self._closed = True
        task, queue = self._task, self._queue
        if task is not None and queue is not None and not task.done():
            if task.get_loop() is asyncio.get_running_loop():
                queue.put_nowait(_Stop())
                await task  # what is queued is written first
            else:
                task.get_loop().call_soon_threadsafe(queue.put_nowait, _Stop())
        await asyncio.get_running_loop().run_in_executor(self._thread, self._conn.close)
        self._thread.shutdown(wait=True)

    async def _run(self, queue: asyncio.Queue[_Item | _Stop]) -> None:
        loop = asyncio.get_running_loop()
        stop = False
        while not stop:
            batch: list[_Item] = []
            first = await queue.get()
            while True:
                if isinstance(first, _Stop):
                    stop = True
                else:
                    batch.append(first)
                if stop or len(batch) >= MAX_BATCH or queue.empty():
                    break
                first = queue.get_nowait()
            if not batch:
                continue
            try:
                outcomes = await asyncio.shield(
                    loop.run_in_executor(self._thread, _commit, self._conn, batch)
                )
            except BaseException as e:  # the batch as a whole did not commit
                logger.warning("sqlite writer: batch of %s failed (%s)", len(batch), e)
                for item in batch:
                    if not item.future.done():
                        item.future.set_exception(
                            e if isinstance(e, Exception) else RuntimeError(repr(e))
                        )
                if not isinstance(e, Exception):
                    raise
                continue
            self.commits += 1
            for item, (ok, value) in zip(batch, outcomes, strict=True):
                if item.future.done():
                    continue
                if ok:
                    item.future.set_result(value)
                else:
                    item.future.set_exception(value)


def _commit(conn: sqlite3.Connection, batch: list[_Item]) -> list[tuple[bool, Any]]:
    """One transaction: each item in its savepoint; the items' outcomes, in order."""
    outcomes: list[tuple[bool, Any]] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for item in batch:
            conn.execute("SAVEPOINT item")
            try:
                value = item.write(conn)
            except Exception as e:
                conn.execute("ROLLBACK TO item")
                conn.execute("RELEASE item")
                outcomes.append((False, e))
            else:
                conn.execute("RELEASE item")
                outcomes.append((True, value))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes
