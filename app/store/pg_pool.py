"""Checking a pooled Postgres connection before it is handed out, only when it may have gone
stale: it was last handed out `idle_s` or more ago (a database restart or a dropped socket
happens while a connection waits, not while it is busy). A connection in steady use skips the
check's round trip, which otherwise doubled the round trips of every short store write.

A connection returned in a bad state (a query interrupted by a cancel, a broken socket) is
not this check's business: the pool itself discards it when it comes back.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

RECHECK_IDLE_S = 2.0


class IdleCheck:
    """The pool's `check` callback: pings a connection only when it was last handed out
    `idle_s` ago or more (or never). No `reset` callback is needed for the bookkeeping, which
    keeps the pool returning connections inline rather than through its maintenance tasks."""

    def __init__(
        self, idle_s: float = RECHECK_IDLE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.idle_s = idle_s
        self._clock = clock
        self._handed: weakref.WeakKeyDictionary[AsyncConnection[Any], float]
        self._handed = weakref.WeakKeyDictionary()
        self.checks = 0  # pings sent (for tests and diagnostics)

    async def check(self, conn: AsyncConnection[Any]) -> None:
        now = self._clock()
        last = self._handed.get(conn)
        if last is None or now - last >= self.idle_s:
            self.checks += 1
            await AsyncConnectionPool.check_connection(conn)  # raises: the pool replaces it
        self._handed[conn] = now
