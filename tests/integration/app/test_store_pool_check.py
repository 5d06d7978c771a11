"""The Postgres pools' connection check against the real server: a connection in steady use is
handed out without a ping; one that sat idle is pinged first, and one the server closed
meanwhile is replaced before anyone uses it."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from app.store.pg_pool import IdleCheck


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _pool(url: str, idle: IdleCheck) -> AsyncConnectionPool[Any]:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=1, max_size=1, open=False, check=idle.check
    )
    await pool.open(wait=True, timeout=10)
    return pool


async def test_a_connection_in_steady_use_is_not_pinged(postgres_url: str) -> None:
    idle = IdleCheck(idle_s=2.0, clock=Clock())
    pool = await _pool(postgres_url, idle)
    try:
        for _ in range(20):
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
    finally:
        await pool.close()

    assert idle.checks == 1  # its first hand-out only


async def test_an_idle_connection_the_server_closed_is_replaced_before_use(
    postgres_url: str,
) -> None:
    clock = Clock()
    idle = IdleCheck(idle_s=2.0, clock=clock)
    pool = await _pool(postgres_url, idle)
    try:
        async with pool.connection() as conn:
            first = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone() or [0])[0]
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # a restart, in effect
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        clock.now += 2.5  # it sat idle in the pool since

        async with pool.connection() as conn:
            second = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone() or [0])[0]
    finally:
        await pool.close()

    assert second != first
    # The first hand-out, the dead connection's ping, and its replacement's first hand-out.
    assert idle.checks == 3
