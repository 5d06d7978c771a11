"""The Postgres checkpointer, riding out a database outage like the run's own writes do
(app/store/outage.py): a checkpoint read or write waits for the database for a bounded time
instead of failing the run. Checkpoint writes are upserts keyed by their ids, so a repeated
one changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointTuple,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool

from app.store.base import StoreUnavailable
from app.store.outage import StoreOutage
from app.store.saver_guard import GuardedWrites

T = TypeVar("T")


class PatientPostgresSaver(GuardedWrites, AsyncPostgresSaver):
    """`AsyncPostgresSaver` whose reads and writes wait out an unreachable database."""

    def __init__(self, pool: AsyncConnectionPool[Any], outage: StoreOutage) -> None:
        super().__init__(pool)
        self._outage = outage

    async def _guard(self, config: RunnableConfig, call: Callable[[], Awaitable[T]]) -> T:
        run_id = str(config.get("configurable", {}).get("thread_id", "?"))

        async def attempt() -> T:
            try:
                return await call()
            except (psycopg.OperationalError, psycopg.InterfaceError) as e:
                raise StoreUnavailable("the checkpoint database is unreachable") from e

        async def not_known() -> T | None:
            return None  # a repeated upsert is harmless: always try again

        return await self._outage.ride(run_id, attempt, not_known)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._guard(config, lambda: AsyncPostgresSaver.aget_tuple(self, config))
