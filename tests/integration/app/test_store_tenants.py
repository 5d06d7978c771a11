"""The tenant column on the real SQLite file and the real Postgres: stored, filtered, counted,
and added in place to a database written before it existed."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from app.store.base import Lease, RunRecord
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore

LEGACY_SQLITE = """CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, result TEXT,
    owner TEXT, lease_until REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0)"""
LEGACY_POSTGRES = """CREATE TABLE lats_runs (id TEXT PRIMARY KEY, task TEXT NOT NULL,
    params JSONB NOT NULL, status TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL, result JSONB, owner TEXT,
    lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    cancel_requested BOOLEAN NOT NULL DEFAULT false)"""


class Backend:
    """One database of either kind: seed it as an old version left it, open stores on it."""

    def __init__(self, path: Path, url: str) -> None:
        self.path, self.url = path, url
        self.opened: list[RunStore] = []

    def seed_legacy(self) -> None:
        """A table without the tenant column, holding one finished run `old`."""
        if self.url:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(LEGACY_POSTGRES)
                conn.execute(
                    "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at)"
                    " VALUES ('old', 't', '{}', 'done', now(), now())"
                )
            return
        now = datetime.now(UTC).isoformat()
        with sqlite3.connect(self.path) as db:
            db.execute(LEGACY_SQLITE)
            db.execute(
                "INSERT INTO runs (id, task, params, status, created_at, updated_at)"
                " VALUES ('old', 't', '{}', 'done', ?, ?)",
                (now, now),
            )

    async def open(self) -> RunStore:
        store: RunStore
        if self.url:
            store = await PostgresRunStore.open(self.url)
        else:
            store = await SqliteRunStore.open(self.path)
        self.opened.append(store)
        return store


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""
    db = Backend(tmp_path / "runs.sqlite", url)
    yield db
    for store in db.opened:
        await store.close()  # type: ignore[attr-defined]


def _record(tenant: str | None, status: str = "queued") -> RunRecord:
    now = datetime.now(UTC)
    return RunRecord.model_validate(
        {
            "id": uuid.uuid4().hex,
            "task": "t",
            "params": {},
            "status": status,
            "created_at": now,
            "updated_at": now,
            "tenant": tenant,
        }
    )


async def test_runs_keep_their_tenant_and_lists_filter_by_it(backend: Backend) -> None:
    store = await backend.open()
    a1, a2, b, nobody = _record("a"), _record("a", "done"), _record("b"), _record(None)
    for record in (a1, a2, b, nobody):
        await store.runs.create(record, started="{}")

    only_a = await store.runs.page(status=None, limit=10, offset=0, tenant="a")
    everyone = await store.runs.page(status=None, limit=10, offset=0)
    a_done = await store.runs.page(status="done", limit=10, offset=0, tenant="a")
    read = await store.runs.get(b.id)

    assert {r.id for r in only_a} == {a1.id, a2.id}
    assert len(everyone) == 4
    assert [r.id for r in a_done] == [a2.id]
    assert read is not None
    assert read.tenant == "b"
    assert (await store.runs.count_open("a"), await store.runs.count_open("b")) == (1, 1)
    assert await store.runs.count_open("c") == 0


async def test_events_after_reads_a_page_at_a_time(backend: Backend) -> None:
    store = await backend.open()
    record = _record("a")
    await store.runs.create(record, started="{}", lease=Lease("w", 30))
    for i in range(4):
        await store.events.append(record.id, "w", "step", f'{{"i": {i}}}')

    first = await store.events.after(record.id, 0, 2)
    second = await store.events.after(record.id, first[-1].seq, 2)
    rest = await store.events.after(record.id, second[-1].seq)

    assert [e.seq for e in first + second + rest] == [1, 2, 3, 4, 5]


async def test_a_store_written_before_tenants_gets_the_column(backend: Backend) -> None:
    backend.seed_legacy()
    store = await backend.open()
    await backend.open()  # a second start finds the column there
    await store.runs.create(_record("a"), started="{}")

    old = await store.runs.get("old")
    mine = await store.runs.page(status=None, limit=10, offset=0, tenant="a")

    assert old is not None
    assert old.tenant is None
    assert len(mine) == 1
