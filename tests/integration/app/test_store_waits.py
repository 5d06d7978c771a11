"""A run's wait for an answer and its steering commands on the real SQLite file and the real
Postgres: a paused run is stored with its event, free and not claimable; an answer queues it
once; commands are numbered per run, read after an id, refused once the run has ended, and
deleted with it."""

from __future__ import annotations

from agents.result import RunResult
from app.store.base import Lease
from tests.support.makers import Opener
from tests.support.runs import run_record

OWNER = "w1"


async def test_a_paused_run_is_not_claimed_until_answered_and_then_only_once(
    open_store: Opener,
) -> None:
    store = await open_store()
    record = run_record()
    await store.runs.create(record, started="{}", lease=Lease(OWNER, 60))

    seq = await store.waits.pause(record.id, OWNER, "interrupt", '{"steps": ["A"]}', "plan")
    paused = await store.runs.get(record.id)
    unclaimed = await store.leases.count_unclaimed()
    claimed_while_waiting = await store.leases.claim_next("w2", 60)
    answered = await store.waits.answer(record.id, {"action": "approve", "by": "alice"})
    answered_twice = await store.waits.answer(record.id, {"action": "reject"})
    claimed = await store.leases.claim_next("w2", 60)

    assert seq == 2
    assert [e.type for e in await store.events.after(record.id, 0)] == ["run_started", "interrupt"]
    assert paused is not None
    assert (paused.status, paused.awaiting, paused.owner) == ("interrupted", "plan", None)
    assert unclaimed == 0
    assert claimed_while_waiting is None
    assert answered is True
    assert answered_twice is False
    assert claimed is not None
    assert claimed.id == record.id
    assert claimed.answer == {"action": "approve", "by": "alice"}
    assert claimed.awaiting is None


async def test_a_waiting_run_can_be_claimed_by_name_to_be_cancelled(open_store: Opener) -> None:
    store = await open_store()
    record = run_record()
    await store.runs.create(record, started="{}", lease=Lease(OWNER, 60))
    await store.waits.pause(record.id, OWNER, "interrupt", "{}", "plan")

    claimed = await store.leases.claim(record.id, "w2", 60)
    await store.events.finish(
        record.id, "w2", "cancelled", "{}", RunResult(run_id=record.id, status="cancelled")
    )
    ended = await store.runs.get(record.id)

    assert claimed is not None
    assert ended is not None
    assert (ended.status, ended.awaiting) == ("cancelled", None)


async def test_commands_are_numbered_per_run_and_refused_once_it_ended(open_store: Opener) -> None:
    store = await open_store()
    first, other = run_record(), run_record()
    for record in (first, other):
        await store.runs.create(record, started="{}", lease=Lease(OWNER, 60))

    ids = [
        await store.commands.add(first.id, "prune", "n1.2", None, "alice"),
        await store.commands.add(other.id, "boost", "n1", None, None),
        await store.commands.add(first.id, "add_step", "n1", "D", "alice"),
    ]
    after_one = await store.commands.after(first.id, 1)
    await store.events.finish(
        first.id, OWNER, "done", "{}", RunResult(run_id=first.id, status="done")
    )
    late = await store.commands.add(first.id, "prune", "n1", None, "alice")
    missing = await store.commands.add("nope", "prune", "n1", None, None)
    await store.runs.delete(first.id)

    assert ids == [1, 1, 2]
    assert [(c.id, c.command, c.node_id, c.step, c.by) for c in after_one] == [
        (2, "add_step", "n1", "D", "alice")
    ]
    assert late is None
    assert missing is None
    assert await store.commands.after(first.id, 0) == []
    assert [c.command for c in await store.commands.after(other.id, 0)] == ["boost"]
