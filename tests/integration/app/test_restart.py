"""Start-up recovery of runs the previous process left behind."""

from __future__ import annotations

import json

from app.http.sse import frames
from app.settings import Settings
from app.store.base import Lease
from app.store.sqlite.store import SqliteRunStore
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.runs import ENDED_LEASE_S, done_event, log_end_without_status, run_record


async def test_a_run_whose_end_was_logged_but_not_its_status_is_ended_with_its_answer_at_start(
    service_for: ServiceMaker, settings: Settings
) -> None:
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    await log_end_without_status(store, "r-ended", done_event("r-ended"))
    await store.close()

    async with service_for(Scenario(plan=["A"])) as svc:
        run = (await svc.client.get("/runs/r-ended")).json()

    assert run["status"] == "done"
    assert run["answer"] == "42"  # ended with its answer when the store opened
    assert svc.models.recorder.calls == []  # nothing ran again


async def test_start_up_leaves_alone_a_run_another_live_process_holds(
    service_for: ServiceMaker, settings: Settings
) -> None:
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    await store.runs.create(
        run_record("r-held", "running"),
        started="{}",
        lease=Lease("alive-elsewhere", 600),
    )
    await store.close()

    async with service_for(Scenario(plan=["A"])) as svc:
        run = (await svc.client.get("/runs/r-held")).json()
        trace = (await svc.client.get("/runs/r-held/trace")).text.splitlines()

    assert run["status"] == "running"
    assert len(trace) == 1  # nothing was written for it here
    assert svc.models.recorder.calls == []


async def _died_holding(store: SqliteRunStore, run_id: str, deaths: int) -> None:
    """A run whose workers each died holding it: created by one, taken over by the rest."""
    record = run_record(run_id, "running")
    started = json.dumps({"type": "run_started"})
    await store.runs.create(record, started=started, lease=Lease("w0", ENDED_LEASE_S))
    for worker in range(1, deaths):
        assert await store.leases.claim(run_id, f"w{worker}", ENDED_LEASE_S) is not None


async def test_a_run_whose_workers_keep_dying_is_failed_not_run_again(
    service_for: ServiceMaker, settings: Settings
) -> None:
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    # `max_takeovers` is 3: this start-up's take-over is the third of one run, the fourth of
    # the other.
    await _died_holding(store, "r-thrice", deaths=3)
    await _died_holding(store, "r-four-times", deaths=4)
    await store.close()

    async with service_for(Scenario(plan=["A"])) as svc:
        stream = (await svc.client.get("/runs/r-thrice/events")).text  # to its end
        resumed = (await svc.client.get("/runs/r-thrice")).json()
        failed = (await svc.client.get("/runs/r-four-times")).json()
        lines = (await svc.client.get("/runs/r-four-times/trace")).text.splitlines()
        metrics = (await svc.client.get("/metrics")).text
    trace = [json.loads(line) for line in lines]

    assert settings.max_takeovers == 3
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "worker_lost"
    assert [e["id"] for e in trace] == [1, 2]
    assert [e["event"]["type"] for e in trace] == ["run_started", "error"]
    assert resumed["status"] == "done"  # taken over the third time: it ran
    assert [f.event for f in frames(stream.splitlines())][-1] == "done"
    assert 'plantree_run_errors_total{code="worker_lost"}' in metrics  # for an alert
