"""Group commit in the SQLite store: writes queued together commit in one transaction, and each
keeps its own outcome (event ids, fencing, rollback, cancellation) as if it had been alone."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from agents.result import RunResult
from app.store.base import Lease, LeaseLost
from app.store.sqlite.store import SqliteRunStore
from app.store.sqlite_writer import BatchWriter
from tests.support.runs import run_record

T = TypeVar("T")
Write = Callable[[sqlite3.Connection], T]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteRunStore]:
    opened = await SqliteRunStore.open(tmp_path / "runs.sqlite")
    yield opened
    await opened.close()


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[BatchWriter]:
    opened = await BatchWriter.open(tmp_path / "plain.sqlite", 1_000)
    await opened.write(lambda conn: conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)"))
    yield opened
    await opened.close()


def _keys(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT k FROM t ORDER BY k").fetchall()]


async def test_writes_queued_together_commit_once(writer: BatchWriter) -> None:
    before = writer.commits

    def insert(key: str) -> Write[int]:
        return lambda conn: conn.execute("INSERT INTO t VALUES (?)", (key,)).rowcount

    counts = await asyncio.gather(*(writer.write(insert(f"k{i:02}")) for i in range(50)))

    assert counts == [1] * 50
    assert writer.commits == before + 1
    assert await writer.read(_keys) == [f"k{i:02}" for i in range(50)]


async def test_a_failing_write_rolls_back_whole_and_alone(writer: BatchWriter) -> None:
    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES ('half')")
        raise ValueError("no")

    def insert(key: str) -> Write[int]:
        return lambda conn: conn.execute("INSERT INTO t VALUES (?)", (key,)).rowcount

    before = writer.commits
    outcomes = await asyncio.gather(
        writer.write(insert("a")),
        writer.write(half_then_fail),
        writer.write(insert("a")),  # a duplicate key: fails alone too
        writer.write(insert("b")),
        return_exceptions=True,
    )

    assert isinstance(outcomes[1], ValueError)
    assert isinstance(outcomes[2], sqlite3.IntegrityError)
    assert not isinstance(outcomes[0], BaseException)
    assert not isinstance(outcomes[3], BaseException)
    assert writer.commits == before + 1
    assert await writer.read(_keys) == ["a", "b"]


async def test_concurrent_appends_across_runs_number_each_run_1_to_n(
    store: SqliteRunStore,
) -> None:
    records = [run_record() for _ in range(10)]
    await asyncio.gather(
        *(store.runs.create(r, started="{}", lease=Lease("me", 60)) for r in records)
    )

    seqs = await asyncio.gather(
        *(store.events.append(r.id, "me", "e", str(i)) for i in range(20) for r in records)
    )

    for n, record in enumerate(records):
        mine = seqs[n::10]
        assert sorted(mine) == list(range(2, 22))
        events = await store.events.after(record.id, 0)
        assert [e.seq for e in events] == list(range(1, 22))
        # appended in the order they were asked for
        assert [e.data for e in events[1:]] == [str(i) for i in range(20)]


async def test_a_fencing_failure_fails_only_its_caller(store: SqliteRunStore) -> None:
    held, other = run_record(), run_record()
    await store.runs.create(held, started="{}", lease=Lease("me", 60))
    await store.runs.create(other, started="{}", lease=Lease("them", 60))
    done = RunResult(run_id=held.id, status="done", answer="ok")

    outcomes = await asyncio.gather(
        store.events.append(held.id, "me", "e", "1"),
        store.events.append(other.id, "me", "e", "x"),
        store.events.finish(
            other.id, "me", "run_done", "x", RunResult(run_id=other.id, status="done")
        ),
        store.events.append(held.id, "me", "e", "2"),
        store.events.finish(held.id, "me", "run_done", "3", done),
        return_exceptions=True,
    )

    assert outcomes[0] == 2
    assert outcomes[3] == 3
    assert outcomes[4] == 4
    assert isinstance(outcomes[1], LeaseLost)
    assert isinstance(outcomes[2], LeaseLost)
    assert [e.seq for e in await store.events.after(other.id, 0)] == [1]
    finished = await store.runs.get(held.id)
    assert finished is not None
    assert finished.status == "done"
    assert finished.result == done
    still = await store.runs.get(other.id)
    assert still is not None
    assert still.status == "queued"
    assert still.owner == "them"


async def test_a_cancelled_callers_write_still_commits(store: SqliteRunStore) -> None:
    record = run_record()
    await store.runs.create(record, started="{}", lease=Lease("me", 60))

    task = asyncio.create_task(store.events.append(record.id, "me", "e", "cancelled"))
    await asyncio.sleep(0)  # queued
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await store.events.append(record.id, "me", "e", "next")

    assert after == 3
    events = await store.events.after(record.id, 0)
    assert [(e.seq, e.data) for e in events] == [(1, "{}"), (2, "cancelled"), (3, "next")]


async def test_a_write_from_another_threads_loop_goes_through(store: SqliteRunStore) -> None:
    # What a synchronous tool's async callbacks do: `asyncio.run` in an executor thread.
    record = run_record()
    await store.runs.create(record, started="{}", lease=Lease("me", 60))
    await store.events.append(record.id, "me", "e", "here")

    def elsewhere() -> int:
        return asyncio.run(store.events.append(record.id, "me", "e", "there"))

    seq = await asyncio.get_running_loop().run_in_executor(None, elsewhere)

    assert seq == 3
    assert [e.data for e in await store.events.after(record.id, 1)] == ["here", "there"]
