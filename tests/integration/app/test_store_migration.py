"""Opening a store brings runs written before the end was one transaction up to date: an
unfinished run whose last event is terminal gets the status and result that event stands for."""

from __future__ import annotations

from agents.events import RunError
from app.store.base import Lease
from app.store.protocols import RunStore
from tests.support.makers import Opener
from tests.support.runs import done_event, log_end_without_status, run_record

DONE = done_event("r-done")
FAILED = RunError(run_id="r-failed", code="model", message="the model failed")


async def _logged_without_status(store: RunStore) -> None:
    """Runs as a store from before `finish` could leave them: the end logged, not the status."""
    await log_end_without_status(store, "r-done", DONE)
    await log_end_without_status(store, "r-failed", FAILED)
    await store.runs.create(
        run_record("r-open", "running"), started="{}", lease=Lease("alive", 600)
    )
    await store.events.append("r-open", "alive", "node_added", "{}")


async def test_a_run_whose_end_was_logged_gets_its_status_and_result_when_the_store_opens(
    open_store: Opener,
) -> None:
    await _logged_without_status(await open_store())

    store = await open_store()
    done = await store.runs.get("r-done")

    assert done is not None
    assert done.result is not None
    assert done.status == "done"
    assert done.result.answer == "42"
    assert done.result.path == ["n1"]
    assert done.owner is None  # the lease is freed with the end
    assert await store.leases.claim_next("worker", 60) is None  # nothing is left to resume


async def test_a_run_whose_logged_end_is_an_error_is_failed_with_its_code(
    open_store: Opener,
) -> None:
    await _logged_without_status(await open_store())

    failed = await (await open_store()).runs.get("r-failed")

    assert failed is not None
    assert failed.result is not None
    assert failed.status == "failed"
    assert failed.result.error == {"code": "model", "message": "the model failed"}


async def test_the_migration_leaves_unended_runs_alone_and_changes_nothing_when_run_again(
    open_store: Opener,
) -> None:
    await _logged_without_status(await open_store())
    first = await open_store()
    after_first = {r.id: r for r in await first.runs.page(status=None, limit=10, offset=0)}

    again = await open_store()
    after_again = {r.id: r for r in await again.runs.page(status=None, limit=10, offset=0)}

    assert after_first["r-open"].status == "running"
    assert after_first["r-open"].owner == "alive"
    assert after_again == after_first  # idempotent: not even `updated_at` moves
    assert await again.events.last_seq("r-done") == 2  # no event is added
