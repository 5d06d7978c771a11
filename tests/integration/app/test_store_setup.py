"""Processes that open the same fresh Postgres database together (API replicas and workers
starting at once) all get through the checkpointer's migrations."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from app.settings import Settings
from app.store import open_backend
from tests.conftest import POSTGRES_ADMIN_URL

PROCESSES = 4


@pytest.fixture
def fresh_url() -> Iterator[str]:
    """An empty database of its own: the migrations only run against one that lacks them."""
    import psycopg

    name = f"lats_setup_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        pytest.skip(f"no PostgreSQL at {POSTGRES_ADMIN_URL} ({type(e).__name__})")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_processes_starting_together_all_finish_the_migrations(fresh_url: str) -> None:
    settings = Settings(database_url=fresh_url)
    opened: list[int] = []

    async def start(index: int) -> None:
        async with open_backend(settings) as (_, checkpointer):
            await checkpointer.aget_tuple({"configurable": {"thread_id": "t"}})
            opened.append(index)

    # Together: one process's CREATE INDEX CONCURRENTLY must not wait for the others while
    # they wait for it.
    await asyncio.wait_for(asyncio.gather(*(start(i) for i in range(PROCESSES))), 60)

    assert sorted(opened) == list(range(PROCESSES))
