"""The check a Postgres connection pool runs before it hands a connection out.

psycopg_pool's own check (`check_connection`) pings the server: a round trip before every
checkout, a large share of a store write's cost in steady use. A pooled connection is idle and
in autocommit, so the server has nothing to say to it unless it is going away: a shutdown, a
restart or an administrator's kill sends an error and closes the socket, and the socket turns
readable. So the socket is polled first (no round trip), and the connection is pinged only when
something arrived or the client already knows it is closed. The ping then replaces a dead
connection before a request meets it, as psycopg_pool's check does.

Left to the ping as before: a peer that vanished without a word (no packet at all), which a
ping could only find by waiting for the network's timeout.
"""

from __future__ import annotations

import select
from typing import Any

from psycopg import AsyncConnection, Connection
from psycopg_pool import AsyncConnectionPool, ConnectionPool


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
