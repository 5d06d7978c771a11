"""Processes that open the same fresh Postgres database together (API replicas and workers
starting at once) all get through the checkpointer's migrations."""

from __future__ import annotations

import asyncio

from app.settings import Settings
from app.store.backend import open_backend

PROCESSES = 4


async def test_processes_starting_together_all_finish_the_migrations(postgres_url: str) -> None:
    settings = Settings(database_url=postgres_url)
    opened: list[int] = []

    async def start(index: int) -> None:
        async with open_backend(settings) as (_, checkpointer):
            await checkpointer.aget_tuple({"configurable": {"thread_id": "t"}})
            opened.append(index)

    # Together: one process's CREATE INDEX CONCURRENTLY must not wait for the others while
    # they wait for it.
    await asyncio.wait_for(asyncio.gather(*(start(i) for i in range(PROCESSES))), 60)

    assert sorted(opened) == list(range(PROCESSES))
