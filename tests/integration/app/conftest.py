from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from app.store.base import RunStore
from app.store.postgres import PostgresRunStore
from app.store.sqlite import SqliteRunStore
from testkit.fakes import Script
from tests.conftest import POSTGRES_ADMIN_URL
from tests.support.server import Service, serve

ServiceMaker = Callable[..., AbstractAsyncContextManager[Service]]
Opener = Callable[[], Awaitable[RunStore]]


@pytest.fixture
def service_for(settings: Settings) -> ServiceMaker:
    """`async with service_for(script, **setting_overrides) as svc:` — a running server."""

    def make(script: Script, **overrides: Any) -> AbstractAsyncContextManager[Service]:
        return serve(settings.model_copy(update=overrides), script)

    return make


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """An empty database of its own for one test (claim tests see every claimable run)."""
    import psycopg

    name = f"lats_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL at {POSTGRES_ADMIN_URL} ({type(e).__name__})")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
            pg = await PostgresRunStore.open(request.getfixturevalue("fresh_postgres_url"))
            pg.notify = request.param == "postgres"
            store = pg
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()  # type: ignore[attr-defined]
