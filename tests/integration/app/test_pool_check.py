"""The pools' check before a checkout (app/store/pg_check.py), on the real PostgreSQL: a healthy
idle connection is handed out without a round trip, one the server ended is replaced before a
request meets it."""

from __future__ import annotations

import select
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from app.store import pg_check


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
