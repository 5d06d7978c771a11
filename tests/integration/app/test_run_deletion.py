"""Deleting finished runs: `DELETE /runs/{id}` and the retention sweep, on the real SQLite file
and the real Postgres. Unfinished runs are never deleted."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from app.http.sse import frames
from app.runs import retention
from app.runs.retention import Retention
from app.settings import Settings
from app.store.sqlite.store import SqliteRunStore
from testkit.gate import Gate
from tests.support.held_runs import service_with_held_run
from tests.support.makers import Opener, ServiceMaker
from tests.support.runs import held_run

GATED = {"task": "t", "max_paths": 1}  # one path: the gate holds its one step


async def test_a_finished_run_is_deleted_with_its_events_an_open_one_is_not(
    open_store: Opener,
) -> None:
    store = await open_store()
    ended, running = (
        await held_run(store, "me", ended=True),
        await held_run(store, "me"),
    )

    assert await store.runs.delete(ended) is True
    assert await store.runs.delete(running) is False
    assert await store.runs.delete(ended) is False  # gone already
    assert await store.runs.get(ended) is None
    assert await store.events.after(ended, 0) == []
    assert await store.runs.get(running) is not None
    assert [e.seq for e in await store.events.after(running, 0)] == [1, 2]


async def test_the_sweep_deletes_only_runs_that_ended_before_the_cutoff(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "BATCH", 2)  # several batches
    store = await open_store()
    ended = [await held_run(store, "me", ended=True) for _ in range(5)]
    running = await held_run(store, "me")
    sweeper = Retention(store, days=1)

    assert await sweeper.sweep() == 0  # all ended just now: within the day
    assert await sweeper.sweep(now=datetime.now(UTC) + timedelta(days=2)) == 5

    assert [await store.runs.get(run_id) for run_id in ended] == [None] * 5
    assert await store.runs.get(running) is not None  # however old, an open run stays


async def test_delete_answers_409_while_a_run_is_open_then_204_then_404(
    service_for: ServiceMaker,
) -> None:
    async with service_with_held_run(service_for, GATED) as (svc, gate, run_id):
        refused = await svc.client.delete(f"/runs/{run_id}")
        gate.release.set()
        stream = (await svc.client.get(f"/runs/{run_id}/events")).text  # to its end
        deleted = await svc.client.delete(f"/runs/{run_id}")
        after = await svc.client.get(f"/runs/{run_id}")
        again = await svc.client.delete(f"/runs/{run_id}")
        missing = await svc.client.delete("/runs/no-such-run")

    assert refused.status_code == 409
    assert refused.json()["code"] == "run_not_finished"
    assert [f.event for f in frames(stream.splitlines())][-1] == "done"
    assert deleted.status_code == 204
    assert (after.status_code, again.status_code, missing.status_code) == (404, 404, 404)


async def test_a_worker_sweeps_at_start_up_when_a_retention_is_set(
    service_for: ServiceMaker, settings: Settings
) -> None:
    path = settings.data_dir / "runs.sqlite"
    store = await SqliteRunStore.open(path)
    ended, running = (
        await held_run(store, "me", ended=True),
        await held_run(store, "me"),
    )
    await store.close()
    two_days_ago = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    with sqlite3.connect(path) as conn:  # the runs ended two days ago
        conn.execute("UPDATE runs SET updated_at = ?", (two_days_ago,))

    async with service_for(Gate(), run_retention_days=1) as svc:
        gone = await svc.client.get(f"/runs/{ended}")
        kept = await svc.client.get(f"/runs/{running}")

    assert gone.status_code == 404
    assert kept.status_code == 200
