"""Threads on the real SQLite file and the real Postgres: a thread's runs listed oldest first,
deleted with it only once every one has ended, threads listed newest first per tenant, and the
thread column added in place to a runs table written before threads existed."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from agents.result import RunResult
from app.store.base import Lease, RunRecord, ThreadRecord
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore

# A runs table as it was before threads (tenants and take-over counts already there).
OLD_SQLITE = """CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, result TEXT,
    owner TEXT, lease_until REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0, tenant TEXT,
    takeovers INTEGER NOT NULL DEFAULT 0)"""
OLD_POSTGRES = """CREATE TABLE lats_runs (id TEXT PRIMARY KEY, task TEXT NOT NULL,
    params JSONB NOT NULL, status TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL, result JSONB, owner TEXT,
    lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    cancel_requested BOOLEAN NOT NULL DEFAULT false, tenant TEXT,
    takeovers INTEGER NOT NULL DEFAULT 0)"""


def _run(thread_id: str, task: str, at: datetime) -> RunRecord:
    return RunRecord(
        id=uuid.uuid4().hex,
        task=task,
        params={},
        status="queued",
        created_at=at,
        updated_at=at,
        tenant="alice",
        thread_id=thread_id,
    )


async def _check_migrated(store: SqliteRunStore | PostgresRunStore) -> None:
    """The run "old", written before threads, reads back on no thread, and a new run on a new
    thread is listed with that thread; `store` is closed."""
    try:
        old = await store.runs.get("old")
        await store.threads.create(ThreadRecord(id="t1", created_at=datetime.now(UTC)))
        record = _run("t1", "new", datetime.now(UTC))
        await store.runs.create(record)
        on_thread = await store.threads.runs("t1")
    finally:
        await store.close()

    assert old is not None
    assert old.thread_id is None
    assert [r.id for r in on_thread] == [record.id]


async def test_a_thread_lists_its_runs_oldest_first_and_deletes_them_once_ended(
    store: RunStore,
) -> None:
    now = datetime.now(UTC)
    thread = ThreadRecord(id=uuid.uuid4().hex, tenant="alice", created_at=now)
    await store.threads.create(thread)
    other = ThreadRecord(id=uuid.uuid4().hex, tenant="alice", created_at=now)
    await store.threads.create(other)
    first, second = _run(thread.id, "first", now), _run(thread.id, "second", now + timedelta(1))
    elsewhere = _run(other.id, "elsewhere", now)
    lease = Lease("w", 60)
    for record in (second, first, elsewhere):
        await store.runs.create(record, started="{}", lease=lease)
    await store.events.finish(
        first.id, "w", "done", "{}", RunResult(run_id=first.id, status="done")
    )

    listed = [r.task for r in await store.threads.runs(thread.id)]
    refused = await store.threads.delete(thread.id)  # `second` is still open
    kept = await store.threads.get(thread.id)
    await store.events.finish(
        second.id, "w", "done", "{}", RunResult(run_id=second.id, status="done")
    )
    deleted = await store.threads.delete(thread.id)

    assert listed == ["first", "second"]
    assert (await store.runs.get(first.id)) is None
    assert (await store.runs.get(second.id)) is None
    assert await store.events.after(first.id, 0) == []
    assert refused is False
    assert kept == thread
    assert deleted is True
    assert await store.threads.get(thread.id) is None
    assert [r.id for r in await store.threads.runs(other.id)] == [elsewhere.id]


async def test_threads_are_listed_newest_first_per_tenant_a_page_at_a_time(store: RunStore) -> None:
    now = datetime.now(UTC)
    made = [
        ThreadRecord(id=f"t{i}", tenant=tenant, created_at=now + timedelta(seconds=i))
        for i, tenant in enumerate(["alice", "bob", "alice", "alice"])
    ]
    for thread in made:
        await store.threads.create(thread)

    alices = await store.threads.page(limit=10, offset=0, tenant="alice")
    page = await store.threads.page(limit=1, offset=1, tenant="alice")
    every = await store.threads.page(limit=10, offset=0)

    assert [t.id for t in alices] == ["t3", "t2", "t0"]
    assert [t.id for t in page] == ["t2"]
    assert [t.id for t in every] == ["t3", "t2", "t1", "t0"]
    assert alices[0] == made[3]


async def test_a_runs_table_from_before_threads_gets_the_thread_column_sqlite(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    now = datetime.now(UTC).isoformat()
    with sqlite3.connect(path) as db:
        db.execute(OLD_SQLITE)
        db.execute(
            "INSERT INTO runs (id, task, params, status, created_at, updated_at)"
            " VALUES ('old', 't', '{}', 'done', ?, ?)",
            (now, now),
        )
    db.close()
    store = await SqliteRunStore.open(path)
    await _check_migrated(store)


async def test_a_runs_table_from_before_threads_gets_the_thread_column_postgres(
    postgres_url: str,
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(OLD_POSTGRES)
        conn.execute(
            "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at)"
            " VALUES ('old', 't', '{}', 'done', now(), now())"
        )
    store = await PostgresRunStore.open(postgres_url)
    await _check_migrated(store)
