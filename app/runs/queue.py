"""Run admission and execution slots.

`LocalRunQueue` is one process's: `max_active_runs` execution slots. A run that finds no free
slot here waits in the store (unclaimed) until a worker with a free slot claims it
(app/runs/claiming.py); `SharedAdmission` bounds those waiting runs across the deployment by
counting them in the store, so every process, API-only ones included, enforces one
`max_queued_runs`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from app.errors import ServiceError


class QueueFull(ServiceError, code="queue_full"):
    """Too many runs are waiting; the caller should retry later."""


class RunQueue(Protocol):
    """Admission and execution slots for runs."""

    @property
    def active(self) -> int: ...

    @property
    def waiting(self) -> int: ...

    @property
    def has_room(self) -> bool:
        """A run taken on now would execute at once (nothing waits, a slot is free)."""

    @property
    def room(self) -> int:
        """How many runs taken on now would execute at once."""

    def admit(self, *, force: bool = False) -> None:
        """Reserve a place for a run, or raise `QueueFull` (never with `force`: a run
        resumed at start-up was admitted before)."""

    def withdraw(self) -> None:
        """Give back an admission whose run never got to wait for a slot."""

    def slot(self) -> AbstractAsyncContextManager[None]:
        """Wait for an execution slot of an admitted run; held while the run executes."""


class LocalRunQueue:
    """`max_active` runs execute at once; up to `max_waiting` more wait for a slot."""

    def __init__(self, max_active: int, max_waiting: int) -> None:
        self._slots = asyncio.Semaphore(max_active)
        self._max_waiting = max_waiting
        self._max_active = max_active
        self._admitted = 0
        self._active = 0

    @property
    def active(self) -> int:
        return self._active

    @property
    def waiting(self) -> int:
        return self._admitted - self._active

    @property
    def has_room(self) -> bool:
        return self.room > 0

    @property
    def room(self) -> int:
        return max(0, self._max_active - self._admitted)

    def admit(self, *, force: bool = False) -> None:
        free = self._max_active - self._active
        if not force and self.waiting >= self._max_waiting + max(0, free):
            raise QueueFull("too many runs are waiting; retry later")
        self._admitted += 1

    def withdraw(self) -> None:
        self._admitted -= 1

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        try:
            async with self._slots:
                self._active += 1
                try:
                    yield
                finally:
                    self._active -= 1
        finally:
            self._admitted -= 1

    def slot(self) -> AbstractAsyncContextManager[None]:
        return self._slot()


class WaitingCount(Protocol):
    """Where the deployment's waiting runs are counted (the run store)."""

    async def count_unclaimed(self) -> int: ...


class SharedAdmission:
    """The deployment-wide bound on waiting runs: a run that no process can start at once is
    admitted while fewer than `max_waiting` runs wait in the store for a worker, whichever
    processes stored them (an API-only process included). Counted, then stored: processes
    admitting at the same moment may overshoot the bound by as many runs as they admit."""

    def __init__(self, store: WaitingCount, max_waiting: int) -> None:
        self._store = store
        self._max_waiting = max_waiting

    async def admit(self) -> None:
        """Raise `QueueFull` when the store already holds `max_waiting` waiting runs."""
        if await self._store.count_unclaimed() >= self._max_waiting:
            raise QueueFull("too many runs are waiting; retry later")
