"""The pools' check before a checkout (app/store/pg_check.py), on the real PostgreSQL: a healthy
idle connection is handed out without a round trip, one the server ended is replaced before a
request meets it, and a database that was unreachable is retried soon after it returns."""

from __future__ import annotations

import asyncio
import select
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout
from psycopg_pool.base import AttemptWithBackoff

from app.store import pg_check
from testkit.tcp_proxy import TcpProxy


def _kill(url: str, pid: int, fileno: int) -> None:
    """End backend `pid` as a shutdown or restart does, and wait until its client socket
    has heard of it."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    readable, _, _ = select.select([fileno], [], [], 10)
    assert readable, "the server's goodbye never reached the pooled connection"


def _one_connection(url: str) -> AsyncConnectionPool[Any]:
    return AsyncConnectionPool(url, min_size=1, max_size=1, check=pg_check.acheck, open=False)


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pings the check sends, by pool kind."""
    sent: list[str] = []
    async_ping = AsyncConnectionPool.check_connection
    sync_ping = ConnectionPool.check_connection

    async def counted_async(conn: psycopg.AsyncConnection[Any]) -> None:
        sent.append("async")
        await async_ping(conn)

    def counted_sync(conn: psycopg.Connection[Any]) -> None:
        sent.append("sync")
        sync_ping(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted_async))
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted_sync))
    return sent


async def test_a_healthy_connection_is_handed_out_without_a_ping(
    postgres_url: str, pings: list[str]
) -> None:
    async with _one_connection(postgres_url) as pool:
        for _ in range(5):
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")

    assert pings == []


async def test_a_connection_the_server_ended_is_replaced_before_use(
    postgres_url: str, pings: list[str]
) -> None:
    async with _one_connection(postgres_url) as pool:
        async with pool.connection() as conn:
            first = conn.info.backend_pid
            fileno = conn.fileno()
        _kill(postgres_url, first, fileno)

        async with pool.connection() as conn:
            cur = await conn.execute("SELECT pg_backend_pid()")
            row = await cur.fetchone()

    assert row is not None
    assert row[0] != first
    assert pings == ["async"]


def test_the_sync_pool_replaces_an_ended_connection_too(
    postgres_url: str, pings: list[str]
) -> None:
    with ConnectionPool(
        postgres_url,
        min_size=1,
        max_size=1,
        check=pg_check.check,
        kwargs={"autocommit": True},
        open=True,
    ) as pool:
        with pool.connection() as conn:
            conn.execute("SELECT 1")
            first = conn.info.backend_pid
            fileno = conn.fileno()
        assert pings == []
        _kill(postgres_url, first, fileno)

        with pool.connection() as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()

    assert row is not None
    assert row[0] != first
    assert pings == ["sync"]


# The pool's backoff and the cap, both ten times shorter than in service: psycopg_pool retries
# after 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s (attempts at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3 s); the cap
# makes that at most 0.2 s.
INITIAL_DELAY_S = 0.1
CAP_S = 0.2
AWAY_S = 3.3  # just after the attempt at 3.1 s: the uncapped pool's next comes at 6.3 s
WAIT_S = 1.0  # a checkout's wait


async def test_a_database_back_after_an_outage_is_reached_at_the_next_checkout(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an outage long enough for the doubling backoff to pass a checkout's wait, the
    pool is reached again at the first checkout after the database returns. (psycopg_pool's
    own pool, next attempt at 6.3 s, times that checkout out: the 503s the service answered
    after an outage had ended.)"""
    monkeypatch.setattr(AttemptWithBackoff, "INITIAL_DELAY", INITIAL_DELAY_S)
    monkeypatch.setattr(AttemptWithBackoff, "DELAY_JITTER", 0.0)
    monkeypatch.setattr(pg_check, "RECONNECT_EVERY_S", CAP_S)
    with TcpProxy.before(postgres_url) as proxy:
        pool = pg_check.ReconnectingPool(
            proxy.through(postgres_url), min_size=1, max_size=1, timeout=WAIT_S, open=False
        )
        async with pool:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
            proxy.cut()
            cut = asyncio.get_running_loop().time()
            with pytest.raises(PoolTimeout):  # the dead connection is dropped, none replaces it
                async with pool.connection(timeout=WAIT_S) as conn:
                    await conn.execute("SELECT 1")
            await asyncio.sleep(AWAY_S - (asyncio.get_running_loop().time() - cut))
            proxy.restore()
            async with pool.connection(timeout=WAIT_S) as conn:
                cur = await conn.execute("SELECT 1")
                row = await cur.fetchone()

    assert row == (1,)
