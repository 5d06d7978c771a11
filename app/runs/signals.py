"""Wake-ups between processes: a run's new events (for followers), a cancel request or a
steering command (for the run's owner), a run waiting for a worker (for idle workers).

Signals only wake; the store stays the record, so a lost signal costs latency, never data
(followers re-read the store on every heartbeat, owners see cancel flags when they renew their
leases and read a run's commands at least every second (app/runs/commands.py), workers sweep
for claimable runs). Implementations:

- `LocalSignals`: one process (and the base of the others);
- `RedisSignals` (app/backends/signals_redis.py): Redis pub/sub, when `redis_url` is set,
  whatever the store;
- `PostgresSignals`: LISTEN on the channels the Postgres store NOTIFYs in its transactions;
- `SqliteSignals`: watches `PRAGMA data_version`, which changes when another process commits
  to the file: one tiny read per interval for the whole process, not one per follower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

CancelHandler = Callable[[str], object]
"""Cancels a run this process owns, if it owns it."""
CancelCheck = Callable[[], Awaitable[None]]
"""Looks up the cancel requests flagged for this process's runs and delivers them."""
CommandHandler = Callable[[str | None], object]
"""Tells the runs' command source that a command was sent to a run (None: to some run)."""


class LocalSignals:
    """In-process wake-ups."""

    def __init__(self) -> None:
        self._watchers: dict[str, set[asyncio.Event]] = {}
        self._queued = asyncio.Event()
        self._on_cancel: CancelHandler | None = None
        self._check_cancels: CancelCheck | None = None
        self._on_command: CommandHandler | None = None

    async def start(
        self,
        *,
        on_cancel: CancelHandler,
        check_cancels: CancelCheck,
        on_command: CommandHandler | None = None,
    ) -> None:
        """Begin delivering and listening: a cancel for a run goes to `on_cancel`, and
        `check_cancels` is called when another process may have flagged runs without a signal
        that names them (the SQLite watcher); a steering command sent goes to `on_command`."""
        self._on_cancel = on_cancel
        self._check_cancels = check_cancels
        self._on_command = on_command
        await self._open()

    async def _open(self) -> None:
        """Begin listening to other processes (nothing to do in one process)."""

    async def close(self) -> None:
        """Stop listening."""

    @contextmanager
    def watch(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set on each new event of `run_id` while the block runs; clear it before
        reading the store, then wait on it."""
        flag = asyncio.Event()
        self._watchers.setdefault(run_id, set()).add(flag)
        try:
            yield flag
        finally:
            group = self._watchers.get(run_id)
            if group is not None:
                group.discard(flag)
                if not group:
                    del self._watchers[run_id]

    def event_written(self, run_id: str) -> None:
        """Wake this process's watchers of `run_id`."""
        for flag in self._watchers.get(run_id, ()):
            flag.set()

    def wake_all(self) -> None:
        for group in self._watchers.values():
            for flag in group:
                flag.set()
        self._queued.set()

    def run_queued(self) -> None:
        """Wake this process's worker: a run is waiting."""
        self._queued.set()

    def announce_queued(self) -> None:
        """A run waits for any worker (stored unclaimed, or given back): wake the workers.
        Here only this process's; the store's NOTIFY reaches the others on Postgres."""
        self.run_queued()

    async def wait_queued(self, within_s: float) -> None:
        """Until a run may be waiting, or `within_s` passed. (`asyncio.timeout`, not
        `wait_for`: on Python 3.11 a cancel that lands as the wait ends is lost in `wait_for`,
        and the claim loop waiting here would never stop.)"""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):
                await self._queued.wait()
        self._queued.clear()

    async def publish_cancel(self, run_id: str) -> None:
        """Ask the run's owner to cancel it (here: this process)."""
        self.cancel_received(run_id)

    def cancel_received(self, run_id: str) -> None:
        if self._on_cancel is not None:
            self._on_cancel(run_id)

    async def publish_command(self, run_id: str) -> None:
        """A steering command was stored for the run: tell its owner. Here only this
        process; the store's NOTIFY reaches the others on Postgres."""
        self.command_received(run_id)

    def command_received(self, run_id: str | None) -> None:
        if self._on_command is not None:
            self._on_command(run_id)


class PostgresSignals(LocalSignals):
    """LISTEN on the Postgres store's channels through one dedicated connection."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def _open(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="lats-listen")
        async with asyncio.timeout(10):
            await self._listening.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def publish_cancel(self, run_id: str) -> None:
        # The store's `leases.request_cancel` already sent the NOTIFY with its commit; local
        # delivery comes back through the listener like any other.
        return

    async def _listen(self) -> None:
        from psycopg import AsyncConnection

        from app.store.postgres.db import (
            CANCEL_CHANNEL,
            COMMAND_CHANNEL,
            EVENTS_CHANNEL,
            QUEUED_CHANNEL,
        )

        delay = 0.5
        while True:
            try:
                conn = await AsyncConnection.connect(self._url, autocommit=True)
                async with conn:
                    channels = (EVENTS_CHANNEL, CANCEL_CHANNEL, QUEUED_CHANNEL, COMMAND_CHANNEL)
                    for channel in channels:
                        await conn.execute(f"LISTEN {channel}")
                    self._listening.set()
                    self.wake_all()  # whatever happened while not listening
                    delay = 0.5
                    async for note in conn.notifies():
                        self._dispatch(note.channel, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                logger.warning("signals: listener lost (%s); reconnecting", type(e).__name__)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10)

    def _dispatch(self, channel: str, payload: str) -> None:
        from app.store.postgres.db import CANCEL_CHANNEL, COMMAND_CHANNEL, EVENTS_CHANNEL

        if channel == EVENTS_CHANNEL:
            self.event_written(payload.rsplit(":", 1)[0])
        elif channel == CANCEL_CHANNEL:
            self.cancel_received(payload)
        elif channel == COMMAND_CHANNEL:
            self.command_received(payload)
        else:
            self.run_queued()


class SqliteSignals(LocalSignals):
    """Wakes everything local when another process commits to the SQLite file; the owner's
    cancel check then finds flagged runs (`cancels`), followers re-read the store."""

    def __init__(self, data_version: Callable[[], Awaitable[int]], every_s: float) -> None:
        super().__init__()
        self._data_version = data_version
        self._every_s = every_s
        self._task: asyncio.Task[None] | None = None

    async def _open(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="lats-sqlite-watch")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        seen = await self._data_version()
        while True:
            await asyncio.sleep(self._every_s)
            try:
                version = await self._data_version()
                if version != seen:
                    seen = version
                    self.wake_all()
                    self.command_received(None)  # maybe a command, to any run
                    if self._check_cancels is not None:
                        await self._check_cancels()
            except Exception as e:
                logger.warning("signals: cannot read the store (%s)", type(e).__name__)
