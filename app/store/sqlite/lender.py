"""Things lent one borrower at a time, in the order borrowers ask: the embedded store's search
connections (app/store/sqlite/db.py) and its search processes
(app/store/sqlite/search_processes.py)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class Lender(Generic[T]):
    """Things lent one borrower at a time, first come first served: a returned one goes
    straight to the borrower that has waited longest, so one that returns it and asks again at
    once queues behind the others (an `asyncio.Queue` would let it take it back first, and at
    8 searches on 2 connections kept some waiting for seconds)."""

    def __init__(self, things: Sequence[T]) -> None:
        self._idle: deque[T] = deque(things)
        self._waiting: deque[asyncio.Future[T]] = deque()

    async def borrow(self) -> T:
        if self._idle and not self._waiting:
            return self._idle.popleft()
        waiter: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give_back(waiter.result())  # handed over as the borrower was cancelled
            elif waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def give_back(self, thing: T) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(thing)
                return
        self._idle.append(thing)
