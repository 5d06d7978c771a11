from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore
from tests.support.makers import Opener


@pytest.fixture(params=["sqlite", "postgres", "postgres-quiet"])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens a new store (its own connection) on one shared database, per call. Postgres
    writes are transactions with a NOTIFY, or single statements when another channel
    (Redis) carries the wake-ups ("quiet")."""
    opened: list[RunStore] = []

    async def make() -> RunStore:
        store: RunStore
        if request.param == "sqlite":
            store = await SqliteRunStore.open(tmp_path / "runs.sqlite")
        else:
            url = request.getfixturevalue("postgres_url")
            store = await PostgresRunStore.open(url, notify=request.param == "postgres")
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
async def store(open_store: Opener) -> RunStore:
    """One store opened by `open_store`, for a test that needs no second connection."""
    return await open_store()
