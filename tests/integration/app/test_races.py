"""Cancels that land in the middle of a history write, made deterministic with gates: the store
holds the write until the test has delivered the cancel, then lets it complete."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from agents.engine import Engine
from agents.events import TERMINAL_TYPES, NodeStarted
from agents.params import RunParams
from app.runs.execution import RunWriter
from app.runs.live import LiveRuns
from app.runs.manager import RunManager
from app.settings import Settings
from app.store.backend import open_backend
from app.store.base import Lease, RunRecord, StoredEvent
from app.store.protocols import EventLog
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.runs import replaced

TREE = Scenario(plan=["A"], replans={"A": ["B"]})


class GatedEvents:
    """An event log whose first write of `method` for event type `kind` waits for `release`."""

    def __init__(self, inner: EventLog, method: str, kind: str) -> None:
        self._inner = inner
        self._method = method
        self._kind = kind
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _gate(self, method: str, kind: str) -> None:
        if method == self._method and kind == self._kind and not self.entered.is_set():
            self.entered.set()
            await self.release.wait()

    async def append(self, run_id: str, owner: str, type_: str, data: str) -> int:
        await self._gate("append", type_)
        return await self._inner.append(run_id, owner, type_, data)

    async def append_many(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        for type_, _ in events:
            await self._gate("append", type_)
        return await self._inner.append_many(run_id, owner, events)

    async def finish(self, run_id: str, owner: str, type_: str, *args: Any) -> int:
        await self._gate("finish", type_)
        return await self._inner.finish(run_id, owner, type_, *args)


async def _deliver() -> None:
    """Yield to the loop (no time passes) so a cancel just requested reaches its task."""
    for _ in range(5):
        await asyncio.sleep(0)


@asynccontextmanager
async def running(
    settings: Settings, gate: tuple[str, str]
) -> AsyncIterator[tuple[RunManager, GatedEvents]]:
    async with open_backend(settings) as (store, checkpointer):
        gated = GatedEvents(store.events, *gate)
        engine = Engine(
            settings=settings, models=FakeModels(TREE), tools=[], checkpointer=checkpointer
        )
        manager = RunManager(
            engine=engine,
            store=replaced(store, events=gated),
            settings=settings,
            checkpointer=checkpointer,
        )
        await manager.start()
        try:
            yield manager, gated
        finally:
            await manager.stop()


async def test_a_cancel_during_an_event_write_lets_the_write_finish_and_ids_continue(
    settings: Settings,
) -> None:
    async with open_backend(settings) as (store, _):
        gated = GatedEvents(store.events, "append", "node_started")
        record = RunRecord(
            id="r1", task="t", params={}, status="queued", created_at=_now(), updated_at=_now()
        )
        await store.runs.create(record, started="{}", lease=Lease("me", 60))
        live = LiveRuns().detached("r1", await store.events.after("r1", 0))
        writer = RunWriter(replaced(store, events=gated), "me", live, wake=lambda _: None)

        emitting = asyncio.create_task(writer.emit(NodeStarted(run_id="r1", node_id="n1")))
        await gated.entered.wait()
        emitting.cancel()
        await _deliver()
        gated.release.set()
        outcome = await asyncio.gather(emitting, return_exceptions=True)
        await writer.emit(NodeStarted(run_id="r1", node_id="n2"))
        stored = await store.events.after("r1", 0)

    assert isinstance(outcome[0], asyncio.CancelledError)
    assert [(e.seq, e.type) for e in stored] == [
        (1, "run_started"),
        (2, "node_started"),
        (3, "node_started"),
    ]
    assert [e.seq for e in live.events] == [1, 2, 3]  # the buffer agrees with the store


async def _cancelled_while_held(
    settings: Settings, held: tuple[str, str]
) -> tuple[RunRecord, list[StoredEvent]]:
    """A run cancelled while the store write `held` (method, event type) is in flight; the
    write then goes through. Its final record and its events."""
    async with running(settings, held) as (manager, gated):
        record = await manager.submit("t", RunParams(max_paths=1))
        await gated.entered.wait()
        assert manager.lives.cancel(record.id)
        await _deliver()
        gated.release.set()
        final = await manager.wait(record.id)
        events = await manager.store.events.after(record.id, 0)
    return final, events


def _whole_history(events: list[StoredEvent]) -> list[str]:
    """The events' types, once checked to be numbered without a gap and to hold exactly one
    terminal event."""
    types = [e.type for e in events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sum(t in TERMINAL_TYPES for t in types) == 1
    return types


async def test_a_cancelled_run_whose_event_write_was_in_flight_has_a_whole_history(
    settings: Settings,
) -> None:
    final, events = await _cancelled_while_held(settings, ("append", "node_started"))

    types = _whole_history(events)
    assert "node_started" in types  # the write the cancel interrupted landed
    assert types[-1] == "cancelled"
    assert final.status == "cancelled"


async def test_a_cancel_during_finish_keeps_the_end_status_and_answer(
    settings: Settings,
) -> None:
    final, events = await _cancelled_while_held(settings, ("finish", "done"))

    types = _whole_history(events)
    assert types[-1] == "done"
    assert final.status == "done"
    assert final.result is not None
    assert final.result is not None
    assert final.result.answer == json.loads(events[-1].data)["answer"]


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
