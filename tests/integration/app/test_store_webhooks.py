"""A run's webhook and its delivery on the real SQLite file and the real Postgres: the URL is
stored with the run, the delivery's state is written by any process after the run has ended
and read back as written."""

from __future__ import annotations

from datetime import UTC, datetime

from agents.result import RunResult
from app.store.base import Lease, WebhookDelivery
from tests.support.makers import Opener
from tests.support.runs import run_record

OWNER = "w1"


async def test_the_webhook_is_stored_and_its_delivery_recorded_after_the_end(
    open_store: Opener,
) -> None:
    store = await open_store()
    other = await open_store()  # another process's connection
    record = run_record().model_copy(update={"webhook": "https://hooks.example.com/x"})
    await store.runs.create(record, started="{}", lease=Lease(OWNER, 60))
    await store.events.finish(
        record.id, OWNER, "done", "{}", RunResult(run_id=record.id, status="done")
    )
    delivery = WebhookDelivery(
        webhook_id=f"msg_{record.id}",
        attempts=2,
        last_status=503,
        last_error=None,
        state="delivering",
        updated_at=datetime.now(UTC),
    )

    before = await other.runs.get(record.id)
    await other.deliveries.record(record.id, delivery)
    after = await store.runs.get(record.id)

    assert before is not None
    assert before.webhook == "https://hooks.example.com/x"
    assert before.delivery is None
    assert after is not None
    assert after.delivery == delivery
    assert after.status == "done"


async def test_a_run_without_a_webhook_has_none(open_store: Opener) -> None:
    store = await open_store()
    record = run_record()
    await store.runs.create(record, started="{}")

    stored = await store.runs.get(record.id)

    assert stored is not None
    assert (stored.webhook, stored.delivery) == (None, None)
