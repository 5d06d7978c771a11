from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.store.base import RunStore
from app.store.postgres import PostgresRunStore
from app.store.sqlite import SqliteRunStore
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
            pg = await PostgresRunStore.open(request.getfixturevalue("postgres_url"))
            pg.notify = request.param == "postgres"
            store = pg
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()  # type: ignore[attr-defined]
