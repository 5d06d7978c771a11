"""Start-up recovery of runs the previous process left behind."""

from __future__ import annotations

from datetime import UTC, datetime

from agents.events import RunDone
from app.settings import ServiceSettings
from app.store.base import RunRecord
from app.store.sqlite import SqliteRunStore
from testkit.scenario import Scenario
from tests.integration.app.conftest import ServiceMaker


async def test_a_run_whose_end_was_logged_but_not_its_status_is_settled_with_its_answer(
    service_for: ServiceMaker, settings: ServiceSettings
) -> None:
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    now = datetime.now(UTC)
    await store.create_run(
        RunRecord(
            id="r-ended", task="t", params={}, status="running", created_at=now, updated_at=now
        ),
        owner="gone",
        ttl_s=0,  # its process died: the lease has expired
    )
    done = RunDone(
        run_id="r-ended",
        answer="42",
        partial=False,
        chosen_id="n1",
        path=["n1"],
        sources=[],
        stop_reason="max_paths",
        metrics={},
    )
    # The end was logged, its status not (what a store written before `finish` could leave).
    await store.append_event("r-ended", "gone", "done", done.model_dump_json())
    await store.close()

    async with service_for(Scenario(plan=["A"])) as svc:
        run = (await svc.client.get("/runs/r-ended")).json()

    assert run["status"] == "done"
    assert run["answer"] == "42"  # settled with its answer
    assert svc.models.recorder.calls == []  # nothing ran again


async def test_start_up_leaves_alone_a_run_another_live_process_holds(
    service_for: ServiceMaker, settings: ServiceSettings
) -> None:
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    now = datetime.now(UTC)
    await store.create_run(
        RunRecord(
            id="r-held", task="t", params={}, status="running", created_at=now, updated_at=now
        ),
        started="{}",
        owner="alive-elsewhere",
        ttl_s=600,
    )
    await store.close()

    async with service_for(Scenario(plan=["A"])) as svc:
        run = (await svc.client.get("/runs/r-held")).json()
        trace = (await svc.client.get("/runs/r-held/trace")).text.splitlines()

    assert run["status"] == "running"
    assert len(trace) == 1  # nothing was written for it here
    assert svc.models.recorder.calls == []
