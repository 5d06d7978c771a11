"""The Postgres store's connection pool, which its parts share, with the wake-ups a write sends.

Connections are in autocommit, and each write is one statement (the fence, the event and the
end of a run joined by common table expressions): one round trip, where a transaction of
separate statements takes one per statement plus `BEGIN` and `COMMIT`. Each commit that
matters to another process also sends a NOTIFY in the same transaction (delivered only if it
commits): `lats_events` ("run_id:seq"), `lats_cancel` (run id), `lats_command` (run id: a
steering command) and `lats_queued`; with Redis for the wake-ups (`notify` off) it sends none,
and a write stays one statement.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from agents.result import RunResult
from app.store.base import UNFINISHED, RunRecord, StoreUnavailable
from app.store.index_sql import Plan, Step, run_steps
from app.store.reads import Dialect, Row, run_record

EVENTS_CHANNEL = "lats_events"
CANCEL_CHANNEL = "lats_cancel"
QUEUED_CHANNEL = "lats_queued"
COMMAND_CHANNEL = "lats_command"

# A pooled connection is waited for this long (also when the database refuses new ones), and a
# statement answered within `CALL_TIMEOUT_S` (a hung database answers nothing, ever).
POOL_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 20.0
OPEN = list(UNFINISHED)
T = TypeVar("T")


class PostgresDb:
    """The pool of one store's database, and whether its writes send NOTIFYs."""

    dialect = Dialect.named("lats_", same="IS NOT DISTINCT FROM", no_limit=None)

    def __init__(self, pool: AsyncConnectionPool, *, notify: bool = True) -> None:
        self._pool = pool
        # False when another channel (Redis) carries the wake-ups: no NOTIFY in transactions.
        self.notify = notify

    @asynccontextmanager
    async def connection(
        self, timeout_s: float = CALL_TIMEOUT_S
    ) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection for one call, bounded in time (`timeout_s`: a call that writes
        much, such as a document's passages, is given longer); an unreachable database
        (refused, dropped, hung) is `StoreUnavailable`."""
        try:
            async with asyncio.timeout(timeout_s), self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, TimeoutError) as e:
            raise StoreUnavailable("the database is unreachable") from e

    def unbounded(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A pooled connection with neither the call's time bound nor its error mapping."""
        return self._pool.connection()

    async def one(self, sql: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
        async with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.replace("?", "%s"), args)
            return await cur.fetchone()

    async def all(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.replace("?", "%s"), args)
            return await cur.fetchall()

    def record(self, row: Row) -> RunRecord:
        # psycopg decodes every column (JSONB to dicts, timestamps to datetimes).
        return run_record(row)

    def notifying(self, conn: AsyncConnection[Any]) -> AbstractAsyncContextManager[Any]:
        """A transaction around a write and its NOTIFY; nothing when no NOTIFY is sent."""
        return conn.transaction() if self.notify else nullcontext()

    async def send(self, conn: AsyncConnection[Any], channel: str, payload: str) -> None:
        """The NOTIFY of a write, inside its transaction (none when NOTIFYs are off)."""
        if self.notify:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def close(self) -> None:
        await self._pool.close()


def jsonb(result: RunResult | None) -> Jsonb | None:
    """A run's result as its JSONB column holds it."""
    return Jsonb(result.model_dump(mode="json")) if result is not None else None


async def run_plan(conn: AsyncConnection[Any], plan: Plan[T]) -> T:
    """Run a plan's steps (app/store/index_sql.py) on `conn`, in its caller's transaction:
    bulk rows by COPY where the step names one."""

    async def run(step: Step) -> list[dict[str, Any]]:
        if step.rows is None:
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(step.sql, step.args)
                return await cur.fetchall() if cur.description else []
        if step.copy is not None:
            async with conn.cursor() as cur, cur.copy(step.copy) as copy:
                for row in step.rows:
                    await copy.write_row(row)
        elif step.rows:
            async with conn.cursor() as cur:
                await cur.executemany(step.sql, step.rows)
        return []

    return await run_steps(plan, run)
