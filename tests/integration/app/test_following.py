"""The one follower of a run (app/runs/following.py) over a real store (SQLite, Postgres):
its stored events as typed items, a plan's wait told once as a pause, and one end, always
last."""

from __future__ import annotations

from collections.abc import AsyncIterator

from app.runs.following import Broken, Ended, Follower, Heartbeat, Paused, RunItem, Step
from app.runs.live import LiveRuns
from app.runs.signals import LocalSignals
from app.store.protocols import RunStore
from tests.support.makers import Opener
from tests.support.runs import held_run


def _follower(store: RunStore) -> Follower:
    return Follower(store, LocalSignals(), LiveRuns(), heartbeat_s=0.01)


async def _until_heartbeat(items: AsyncIterator[RunItem]) -> list[RunItem]:
    """The items up to the first heartbeat (left out), or to the end."""
    seen: list[RunItem] = []
    async for item in items:
        if isinstance(item, Heartbeat):
            break
        seen.append(item)
    return seen


async def _waiting_run(store: RunStore) -> str:
    """A run stopped at its plan (`run_started`, `plan`, then `interrupt` with its wait)."""
    run_id = await held_run(store, "elsewhere")
    await store.waits.pause(run_id, "elsewhere", "interrupt", '{"steps": ["A"]}', "plan")
    return run_id


async def test_a_run_that_ends_is_its_steps_then_its_terminal_event(
    open_store: Opener,
) -> None:
    store = await open_store()
    run_id = await held_run(store, "elsewhere", ended=True)

    items = [item async for item in _follower(store).follow(run_id, 0)]

    assert [type(i) for i in items] == [Step, Step, Ended]
    assert [i.event.type for i in items if isinstance(i, Step | Ended)] == [
        "run_started",
        "plan",
        "done",
    ]


async def test_a_plan_waiting_for_its_answer_is_one_pause_with_its_interrupt(
    open_store: Opener,
) -> None:
    store = await open_store()
    run_id = await _waiting_run(store)

    items = await _until_heartbeat(_follower(store).follow(run_id, 0))

    assert [type(i) for i in items] == [Step, Step, Paused]
    pause = items[-1]
    assert isinstance(pause, Paused)
    assert pause.event is not None
    assert pause.event.type == "interrupt"


async def test_a_follow_that_begins_past_the_interrupt_is_told_the_run_waits(
    open_store: Opener,
) -> None:
    store = await open_store()
    run_id = await _waiting_run(store)
    last = await store.events.last_seq(run_id)

    items = await _until_heartbeat(_follower(store).follow(run_id, last))

    assert items == [Paused(None)]


async def test_a_run_that_does_not_exist_ends_the_follow_as_deleted(
    open_store: Opener,
) -> None:
    store = await open_store()
    items = [item async for item in _follower(store).follow("no-such-run", 0)]

    assert len(items) == 1
    assert isinstance(items[0], Broken)
    assert items[0].code == "run_deleted"
