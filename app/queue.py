"""The run queue of one process: admits runs up to a bound and hands out execution slots.

Across processes, runs wait in the store until a worker with a free slot claims them
(app/claiming.py); this queue only bounds what one process takes on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from agents.errors import LatsError


class QueueFull(LatsError):
    """Too many runs are waiting; the caller should retry later."""

    code = "queue_full"


class RunQueue(Protocol):
    """Admission and execution slots for runs."""

    @property
    def active(self) -> int: ...

    @property
    def waiting(self) -> int: ...

    @property
    def has_room(self) -> bool:
        """A run taken on now would execute at once (nothing waits, a slot is free)."""

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
        return self._admitted < self._max_active

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
