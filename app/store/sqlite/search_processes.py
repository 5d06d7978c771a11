"""The embedded store's full-text searches in processes of their own.

A search over a large collection is about 1.3 ms of SQLite, which runs without the interpreter's
lock, and about 0.6 ms of Python around it, which holds it (a question's search over 100,000
passages, docs/benchmarks.md §17). On threads, eight searches at once on 2 cores kept 1.6 of
them busy: the Python parts queue on the one lock. Processes share no lock, so the searches
of one service process are sent to `count` worker processes (app/store/sqlite/search_worker.py),
each with its own reading connection to the store's file, and the service process only sends a
query and reads back its few rows.

- The workers are started by the first search, not when the store opens: a store that is never
  searched starts none. Until one has opened its connection and said so, searches run on the
  store's own search connections (app/store/sqlite/db.py), as they do whenever `search` answers
  None: no worker ready, none free within `WAIT_S`, a worker lost or a statement failed in it.
  Both ways run the same steps on the same file and find the same passages.
- A worker answers one search at a time; searches wait for a free one in the order they came
  (`Lender`). A caller cancelled meanwhile stops waiting; the worker is lent again once it has
  answered.
- A worker that dies (or stops answering within `ANSWER_S`) is stopped and replaced by the next
  search; a worker that cannot be started keeps the searches on the connections for `BROKEN_S`.
- Each worker takes about 55 MB of memory and a connection to the file; `close` stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.store.passage_index import SearchQuery
from app.store.sqlite.lender import Lender

logger = logging.getLogger(__name__)

WORKER = "app.store.sqlite.search_worker"
PROCESSES = 3
"""Workers a store starts: as many as its search connections (app/store/sqlite/db.py
`SEARCHERS`)."""
START_S = 30.0
"""How long a worker may take to start and open its connection."""
WAIT_S = 2.0
"""How long a search waits for a free worker before it runs on a connection here instead."""
ANSWER_S = 30.0
"""How long a worker may take to answer one search (the connections' busy timeout)."""
BROKEN_S = 60.0
"""How long searches stay on the connections after a worker could not be started."""
HEADER = struct.Struct(">I")
"""A frame's length, before its pickle: frames both ways are a length, then a pickle."""


def frame(message: Any) -> bytes:
    """`message` as one frame, as both ends write them (app/store/sqlite/search_worker.py)."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


class WorkerLost(Exception):
    """A worker closed its end, or did not answer in time."""


@dataclass(eq=False)
class _Worker:
    process: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def ask(self, query: SearchQuery) -> list[dict[str, Any]] | None:
        """The rows of `query`'s search, or None when SQLite failed it in the worker."""
        self.writer.write(frame(tuple(query)))
        try:
            await self.writer.drain()
        except ConnectionError as e:
            raise WorkerLost(type(e).__name__) from e
        reply = await _read(self.reader, ANSWER_S)
        if reply[0] == "ok":
            rows: list[dict[str, Any]] = reply[1]
            return rows
        logger.warning("search process %s: %s", self.process.pid, reply[1])
        return None

    async def stop(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
        try:
            async with asyncio.timeout(5):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


@dataclass(eq=False)
class SearchProcesses:
    """`count` worker processes searching the SQLite file `path` (the module docstring)."""

    path: Path
    count: int
    answered: int = 0
    """Searches the workers answered (the rest ran on the store's connections)."""
    _workers: set[_Worker] = field(default_factory=set)
    _free: Lender[_Worker] = field(default_factory=lambda: Lender([]))
    _launching: int = 0
    _tasks: set[asyncio.Future[None]] = field(default_factory=set)
    _starts: set[asyncio.Future[None]] = field(default_factory=set)
    _broken_until: float = 0.0
    _closed: bool = False

    @property
    def ready(self) -> int:
        """Workers that have started and not been lost."""
        return len(self._workers)

    async def search(self, query: SearchQuery) -> list[dict[str, Any]] | None:
        """`query`'s rows from a worker, or None where the caller is to search itself."""
        if self._closed:
            return None
        self._start_missing()
        if not self._workers:
            return None
        try:
            async with asyncio.timeout(WAIT_S):
                worker = await self._free.borrow()
        except TimeoutError:
            return None
        if worker not in self._workers:  # lost while it waited to be lent
            return None
        asked = asyncio.ensure_future(worker.ask(query))
        asked.add_done_callback(lambda done: self._answered(worker, done))
        try:
            rows = await asyncio.shield(asked)
        except Exception:  # lost, or failed in a way `_answered` has logged
            return None
        if rows is not None:
            self.answered += 1
        return rows

    def _answered(
        self, worker: _Worker, asked: asyncio.Future[list[dict[str, Any]] | None]
    ) -> None:
        if not asked.cancelled() and asked.exception() is None:
            self._free.give_back(worker)
            return
        logger.warning(
            "search process %s lost (%r); searching here until it is replaced",
            worker.process.pid,
            None if asked.cancelled() else asked.exception(),
        )
        self._workers.discard(worker)
        self._later(worker.stop())

    def _start_missing(self) -> None:
        missing = self.count - len(self._workers) - self._launching
        if missing <= 0 or time.monotonic() < self._broken_until:
            return
        for _ in range(missing):
            self._launching += 1
            self._starts.add(self._later(self._start()))

    def _later(self, work: Any) -> asyncio.Future[None]:
        task: asyncio.Future[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._starts.discard)
        return task

    async def _start(self) -> None:
        try:
            async with asyncio.timeout(START_S):
                worker = await self._started()
        except Exception as e:  # no process, or one that exited or said nothing in time
            logger.warning(
                "search process could not start (%r); searching here for %.0f s", e, BROKEN_S
            )
            self._broken_until = time.monotonic() + BROKEN_S
            return
        finally:
            self._launching -= 1
        if self._closed:
            await worker.stop()
            return
        self._workers.add(worker)
        self._free.give_back(worker)

    async def _started(self) -> _Worker:
        ours, theirs = socket.socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                WORKER,
                "--fd",
                str(theirs.fileno()),
                "--path",
                str(self.path),
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_connection(sock=ours)
        worker = _Worker(process, reader, writer)
        try:
            if await _read(reader, START_S) != ("ready",):
                raise WorkerLost("it did not say it was ready")
        except BaseException:
            await worker.stop()
            raise
        return worker

    async def close(self) -> None:
        """Stop the workers once the searches they are running have their answers (waiting at
        most `ANSWER_S`), and those still starting; later searches answer None."""
        self._closed = True
        for start in self._starts:
            start.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        held: list[_Worker] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ANSWER_S):
                while len(held) < len(self._workers):
                    held.append(await self._free.borrow())
        workers, self._workers = list(self._workers), set()
        await asyncio.gather(*(worker.stop() for worker in workers), return_exceptions=True)
        await asyncio.gather(*self._tasks, return_exceptions=True)  # the lost ones' stops


async def _read(reader: asyncio.StreamReader, within_s: float) -> Any:
    """The next frame's message."""
    try:
        async with asyncio.timeout(within_s):
            header = await reader.readexactly(HEADER.size)
            body = await reader.readexactly(HEADER.unpack(header)[0])
    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError) as e:
        raise WorkerLost(type(e).__name__) from e
    return pickle.loads(body)
