"""Leases, fencing and store-assigned event ids on the real SQLite file and the real Postgres:
two stores (two connections, as two processes have) race for the same rows."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from agents.result import RunResult
from app.store.base import Lease, LeaseLost
from app.store.protocols import RunStore
from tests.support.makers import Opener
from tests.support.runs import ENDED_LEASE_S as ENDED
from tests.support.runs import run_record as _record


def _done(run_id: str, answer: str) -> RunResult:
    return RunResult(run_id=run_id, status="done", answer=answer)


async def test_two_claimers_of_a_free_run_one_wins(open_store: Opener) -> None:
    a, b = await open_store(), await open_store()
    for _ in range(20):
        record = _record()
        await a.runs.create(record, started="{}")
        won = await asyncio.gather(
            a.leases.claim(record.id, "a", 30), b.leases.claim(record.id, "b", 30)
        )

        assert sum(r is not None for r in won) == 1


async def test_claim_next_never_hands_one_run_to_two_workers(open_store: Opener) -> None:
    stores = [await open_store() for _ in range(3)]
    ids = set()
    for _ in range(6):
        record = _record()
        ids.add(record.id)
        await stores[0].runs.create(record)

    claimed = await asyncio.gather(
        *(s.leases.claim_next(f"w{i}-{k}", 30) for k in range(4) for i, s in enumerate(stores))
    )
    got = [r.id for r in claimed if r is not None]

    assert sorted(got) == sorted(ids)


async def test_claim_some_takes_the_oldest_up_to_its_limit_and_never_one_run_twice(
    open_store: Opener,
) -> None:
    stores = [await open_store() for _ in range(2)]
    start = datetime.now(UTC)
    records = [  # created a second apart: the oldest are known
        _record().model_copy(update={"created_at": start + timedelta(seconds=n)}) for n in range(7)
    ]
    for record in records:
        await stores[0].runs.create(record)
    held = _record()
    await stores[0].runs.create(held, lease=Lease("alive", 60))

    first = await stores[0].leases.claim_some("a", 30, 3)
    racing = await asyncio.gather(
        stores[0].leases.claim_some("b", 30, 3), stores[1].leases.claim_some("c", 30, 3)
    )
    rest = await stores[1].leases.claim_some("d", 30, 3)

    assert [r.id for r in first] == [r.id for r in records[:3]]  # the oldest, oldest first
    assert [r.owner for r in first] == ["a", "a", "a"]
    taken = [r.id for batch in racing for r in batch] + [r.id for r in rest]
    assert sorted(taken) == sorted(r.id for r in records[3:])  # each once; the held one never
    assert await stores[1].leases.claim_some("e", 30, 5) == []


async def test_a_held_lease_is_not_taken_an_expired_one_is(store: RunStore) -> None:
    held, expired = _record(), _record()
    await store.runs.create(held, lease=Lease("alive", 60))
    await store.runs.create(expired, lease=Lease("dead", ENDED))

    assert await store.leases.claim(held.id, "other", 30) is None
    taken = await store.leases.claim(expired.id, "other", 30)
    assert taken is not None
    assert taken.owner == "other"
    assert await store.leases.claim_next("third", 30) is None


async def test_event_ids_come_from_the_store_and_continue_after_a_take_over(
    store: RunStore,
) -> None:
    record = _record()
    await store.runs.create(record, started='{"type": "run_started"}', lease=Lease("old", ENDED))
    first = await store.events.append(record.id, "old", "node_started", "{}")
    assert await store.leases.claim(record.id, "new", 30) is not None

    with pytest.raises(LeaseLost):
        await store.events.append(record.id, "old", "node_started", "{}")  # fenced
    with pytest.raises(LeaseLost):
        await store.events.finish(record.id, "old", "done", "{}", _done(record.id, "zombie"))
    second = await store.events.append(record.id, "new", "node_started", "{}")

    assert (first, second) == (2, 3)
    assert [e.seq for e in await store.events.after(record.id, 0)] == [1, 2, 3]


async def test_finish_stores_terminal_event_status_and_result_together(store: RunStore) -> None:
    record = _record()
    await store.runs.create(record, started="{}", lease=Lease("me", 30))
    seq = await store.events.finish(
        record.id, "me", "done", json.dumps({"answer": "42"}), _done(record.id, "42")
    )
    stored = await store.runs.get(record.id)

    assert seq == 2
    assert stored is not None
    assert (stored.status, stored.result, stored.owner) == ("done", _done(record.id, "42"), None)
    with pytest.raises(LeaseLost):  # exactly one terminal event
        await store.events.finish(
            record.id, "me", "cancelled", "{}", RunResult(run_id=record.id, status="cancelled")
        )
    assert (
        await store.leases.claim(record.id, "other", 30) is None
    )  # a finished run is never claimed


async def test_renew_keeps_leases_and_reports_cancel_requests(store: RunStore) -> None:
    mine, flagged, orphan = _record(), _record(), _record()
    for record in (mine, flagged, orphan):
        await store.runs.create(record, lease=Lease("me", ENDED))
    await store.leases.request_cancel(flagged.id)

    held = await store.leases.renew("me", 60, [mine.id, flagged.id])  # no task behind `orphan`

    assert {(h.run_id, h.cancel_requested) for h in held} == {
        (mine.id, False),
        (flagged.id, True),
    }
    assert await store.leases.claim(mine.id, "other", 30) is None  # renewed past its first end
    assert await store.leases.claim(orphan.id, "other", 30) is not None  # expired: claimed again
    assert await store.leases.cancel_requests("me") == [flagged.id]
    assert await store.leases.mark_running_and_check_cancel(flagged.id, "me") is True


async def test_a_released_run_is_claimable_at_once(store: RunStore) -> None:
    record = _record()
    await store.runs.create(record, lease=Lease("me", 60))
    await store.leases.release(record.id, "me", "interrupted")

    taken = await store.leases.claim_next("next", 30)

    assert taken is not None
    assert (taken.id, taken.status) == (record.id, "interrupted")


async def test_only_a_take_over_from_a_worker_that_held_the_run_is_counted(store: RunStore) -> None:
    queued, given_back, held = _record(), _record(), _record()
    await store.runs.create(queued)  # free from the start
    await store.runs.create(given_back, lease=Lease("drained", 60))
    await store.leases.release(given_back.id, "drained", "interrupted")
    await store.runs.create(held, lease=Lease("died", ENDED))  # its lease is already over

    taken = {r.id: r for r in [await store.leases.claim_next("next", 30) for _ in range(3)] if r}
    again = await store.leases.claim(held.id, "next", 30)  # its own run: no take-over
    assert await store.leases.claim(held.id, "third", 0) is None  # "next" holds it for 30 s

    assert {run_id: r.takeovers for run_id, r in taken.items()} == {
        queued.id: 0,
        given_back.id: 0,
        held.id: 1,
    }
    assert again is not None
    assert again.takeovers == 1
