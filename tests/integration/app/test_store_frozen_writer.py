"""A writer frozen inside its transaction (between an event's insert, which holds the run's row
lock, and its NOTIFY) must not keep a take-over waiting: the server ends the frozen session,
the other worker claims the run, and the frozen writer, once awake, is fenced off. Two stores on
the real Postgres, as two processes have."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.backends.cache_postgres import PostgresCacheStore
from app.store import pg_check
from app.store.base import Lease, LeaseLost, StoreUnavailable
from app.store.postgres.store import PostgresRunStore
from tests.support.runs import run_record


async def test_a_writer_frozen_in_its_transaction_does_not_hold_up_a_take_over(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = await PostgresRunStore.open(postgres_url, notify=True)
    taker = await PostgresRunStore.open(postgres_url, notify=True)
    try:
        record = run_record()
        await frozen.runs.create(record, started="{}", lease=Lease("frozen", 1.0))
        assert await frozen.events.append(record.id, "frozen", "node_started", "{}") == 2

        locked = asyncio.Event()

        async def freeze(*_: object) -> None:  # the process stops after its first statement
            locked.set()
            await asyncio.sleep(3600)

        monkeypatch.setattr(frozen._db, "send", freeze)
        write = asyncio.create_task(frozen.events.append(record.id, "frozen", "node_started", "{}"))
        await asyncio.wait_for(locked.wait(), 10)
        await asyncio.sleep(1.5)  # its lease has run out; its transaction still holds the row

        started = time.monotonic()
        taken = await asyncio.wait_for(taker.leases.claim(record.id, "taker", 30), 30)
        waited = time.monotonic() - started

        assert taken is not None
        assert taken.owner == "taker"
        assert waited < pg_check.IDLE_IN_TRANSACTION_S + 5, waited
        # Woken: the transaction it was in is gone (its event never landed), and a new write
        # of the old owner is fenced off.
        write.cancel()
        with pytest.raises((asyncio.CancelledError, StoreUnavailable)):
            await write
        monkeypatch.undo()
        with pytest.raises(LeaseLost):
            await frozen.events.append(record.id, "frozen", "node_started", "{}")
        assert await taker.events.append(record.id, "taker", "node_started", "{}") == 3
        assert [e.seq for e in await taker.events.after(record.id, 0)] == [1, 2, 3]
    finally:
        await frozen.close()
        await taker.close()


async def test_the_stores_and_the_caches_connections_carry_the_session_limit(
    postgres_url: str,
) -> None:
    limit = f"{int(pg_check.IDLE_IN_TRANSACTION_S)}s"
    store = await PostgresRunStore.open(postgres_url)
    try:
        row = await store._db.one("SHOW idle_in_transaction_session_timeout", ())
    finally:
        await store.close()
    cache = PostgresCacheStore(postgres_url)
    try:
        with cache._pool.connection() as conn:
            shown = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
    finally:
        cache.close()

    assert row == {"idle_in_transaction_session_timeout": limit}
    assert shown == (limit,)
