"""How the Postgres connection pools treat a database that goes away: the check a pool runs
before it hands a connection out, and how soon it reconnects once the database is back.

psycopg_pool's own check (`check_connection`) pings the server: a round trip before every
checkout, a large share of a store write's cost in steady use. A pooled connection is idle and
in autocommit, so the server has nothing to say to it unless it is going away: a shutdown, a
restart or an administrator's kill sends an error and closes the socket, and the socket turns
readable. So the socket is polled first (no round trip), and the connection is pinged only when
something arrived or the client already knows it is closed. The ping then replaces a dead
connection before a request meets it, as psycopg_pool's check does.

Left to the ping as before: a peer that vanished without a word (no packet at all), which a
ping could only find by waiting for the network's timeout.

Reconnecting: psycopg_pool retries a failed connection attempt after a delay that doubles each
time (1 s, 2 s, 4 s, ... until its `reconnect_timeout`), so after an outage of T seconds the
pool may wait up to about T more before it tries again, and every request meanwhile waits out
its pool timeout and is answered 503. The pools here retry at least every
`RECONNECT_EVERY_S`: the service is back within about a second of its database.

A client frozen inside a transaction (SIGSTOP, a long pause of its VM) keeps the transaction's
row locks for as long as its socket stays open, which is for as long as its kernel runs: the
worker that takes its runs over would wait on the run's row lock until the frozen one wakes.
Every pooled connection therefore asks the server to end its session when it sits inside a
transaction for `IDLE_IN_TRANSACTION_S` (`idle_in_transaction_session_timeout`). The writes
here are one statement, or two sent back to back, so a live client is never idle that long; a
frozen one finds its connection closed when it wakes, and its write fails as in an outage.
"""

from __future__ import annotations

import select
from typing import Any

from psycopg import AsyncConnection, Connection
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from psycopg_pool.pool import AddConnection as SyncAddConnection
from psycopg_pool.pool import MaintenanceTask as SyncTask
from psycopg_pool.pool_async import AddConnection, MaintenanceTask

RECONNECT_EVERY_S = 1.0  # the longest wait between two attempts to reach a lost database
IDLE_IN_TRANSACTION_S = 5.0  # the server ends a session left this long inside a transaction


def _session_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """A pool's connection arguments with the session limit above added to its `options`."""
    merged = dict(kwargs or {})
    limit = f"-c idle_in_transaction_session_timeout={int(IDLE_IN_TRANSACTION_S * 1000)}"
    merged["options"] = f"{merged['options']} {limit}" if merged.get("options") else limit
    return merged


def _may_be_dead(conn: AsyncConnection[Any] | Connection[Any]) -> bool:
    """True when the connection is closed, or its server sent something while it sat idle."""
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


async def acheck(conn: AsyncConnection[Any]) -> None:
    """`check=` of an `AsyncConnectionPool`: raises when the connection is dead."""
    if _may_be_dead(conn):
        await AsyncConnectionPool.check_connection(conn)


def check(conn: Connection[Any]) -> None:
    """`check=` of a `ConnectionPool`: raises when the connection is dead."""
    if _may_be_dead(conn):
        ConnectionPool.check_connection(conn)


def _delay(task: object, delay: float) -> float:
    """A reconnection attempt's delay, capped; any other maintenance task's as it was."""
    if isinstance(task, AddConnection | SyncAddConnection):
        return min(delay, RECONNECT_EVERY_S)
    return delay


class ReconnectingPool(AsyncConnectionPool[Any]):
    """An `AsyncConnectionPool` with the check above that retries a lost database at least
    every `RECONNECT_EVERY_S`, its sessions limited as above."""

    def __init__(
        self, conninfo: str, *, kwargs: dict[str, Any] | None = None, **options: Any
    ) -> None:
        super().__init__(conninfo, check=acheck, kwargs=_session_kwargs(kwargs), **options)

    async def schedule_task(self, task: MaintenanceTask, delay: float) -> None:
        await super().schedule_task(task, _delay(task, delay))


class ReconnectingSyncPool(ConnectionPool[Any]):
    """A `ConnectionPool` with the check above that retries a lost database at least every
    `RECONNECT_EVERY_S`, its sessions limited as above."""

    def __init__(
        self, conninfo: str, *, kwargs: dict[str, Any] | None = None, **options: Any
    ) -> None:
        super().__init__(conninfo, check=check, kwargs=_session_kwargs(kwargs), **options)

    def schedule_task(self, task: SyncTask, delay: float) -> None:
        super().schedule_task(task, _delay(task, delay))
