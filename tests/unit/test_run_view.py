"""The API's view of a stored run: the fields it shows as stored, and the answer fields."""

from __future__ import annotations

from datetime import UTC, datetime

from app.http.responses import SHOWN_AS_STORED, view
from app.store.base import RunRecord, WebhookDelivery


def test_a_view_shows_the_records_fields_and_not_a_callers_answer() -> None:
    record = RunRecord(
        id="r1",
        task="What?",
        params={"max_paths": 2},
        status="interrupted",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        updated_at=datetime(2026, 1, 3, tzinfo=UTC),
        thread_id="t1",
        awaiting="plan",
        answer={"approve": True},
        webhook="https://hooks.example/end",
        delivery=WebhookDelivery(
            webhook_id="w1", attempts=1, state="delivering", updated_at=datetime.now(UTC)
        ),
    )

    shown = view(record, nodes=[{"id": "n1"}])

    assert shown.model_dump(include=SHOWN_AS_STORED) == record.model_dump(include=SHOWN_AS_STORED)
    assert (shown.run_id, shown.nodes) == ("r1", [{"id": "n1"}])
    assert shown.answer is None
