"""The events of one moment of a run are stored in one write: a store appends them with
consecutive ids, all or none, fenced like one event; the run's writer writes nothing once its
run is lost; a batch that landed before its reply was lost is not written twice; and the
engine hands a round's events over together, each job's start before anything the job says."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool

from agents.events import Event, NodeStarted
from agents.params import RunParams
from app.runs.execution import RunWriter
from app.runs.live import LiveRuns
from app.settings import Settings
from app.store.backend import open_backend
from app.store.base import Lease, LeaseLost, RunRecord, StoreUnavailable
from app.store.outage import StoreOutage
from app.store.protocols import EventLog, RunStore
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker
from tests.support.runs import replaced, run_record

TREE = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D"]},
    tools={step: ("lookup", {"query": step}) for step in "ABCD"},
)


@tool
def lookup(query: str) -> str:
    """Look a query up."""
    return f"found {query}"


async def test_a_batch_gets_consecutive_ids_in_its_order_and_is_fenced(store: RunStore) -> None:
    record = run_record()
    await store.runs.create(record, started='{"type": "run_started"}', lease=Lease("me", 60))

    seqs = await store.events.append_many(record.id, "me", [("a", "1"), ("b", "2"), ("c", "3")])
    with pytest.raises(LeaseLost):
        await store.events.append_many(record.id, "stranger", [("d", "4"), ("e", "5")])
    after = await store.events.append(record.id, "me", "f", "6")

    assert seqs == [2, 3, 4]
    assert after == 5
    stored = await store.events.after(record.id, 0)
    assert [(e.seq, e.type, e.data) for e in stored[1:]] == [
        (2, "a", "1"),
        (3, "b", "2"),
        (4, "c", "3"),
        (5, "f", "6"),
    ]
    assert await store.events.append_many(record.id, "me", []) == []


def _now() -> datetime:
    return datetime.now(UTC)


async def _held_run(store: RunStore) -> RunRecord:
    record = RunRecord(
        id="r1", task="t", params={}, status="queued", created_at=_now(), updated_at=_now()
    )
    await store.runs.create(record, started="{}", lease=Lease("me", 60))
    return record


async def test_the_writer_stores_a_moment_at_once_and_nothing_once_the_run_is_lost(
    settings: Settings,
) -> None:
    async with open_backend(settings) as (store, _):
        await _held_run(store)
        live = LiveRuns().detached("r1", await store.events.after("r1", 0))
        writer = RunWriter(store, "me", live, wake=lambda _: None)

        await writer.emit_all(
            [NodeStarted(run_id="r1", node_id="n1"), NodeStarted(run_id="r1", node_id="n2")]
        )
        live.lose()  # the lease is gone: this writer writes nothing more
        await writer.emit_all([NodeStarted(run_id="r1", node_id="n3")])
        stored = await store.events.after("r1", 0)

    assert [(e.seq, e.type) for e in stored] == [
        (1, "run_started"),
        (2, "node_started"),
        (3, "node_started"),
    ]
    assert ['"n1"' in e.data for e in stored[1:]] == [True, False]
    assert [e.seq for e in live.events] == [1, 2, 3]  # the buffer agrees with the store


class ReplyLost:
    """An event log whose first batch commits and then loses its reply, as a dropped
    connection does; one that counts the batches it was asked to write."""

    def __init__(self, inner: EventLog) -> None:
        self._inner = inner
        self.batches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append_many(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        self.batches += 1
        seqs = await self._inner.append_many(run_id, owner, events)
        if self.batches == 1:
            raise StoreUnavailable("the connection dropped after the commit")
        return seqs


async def test_a_batch_that_landed_before_its_reply_was_lost_is_not_written_again(
    settings: Settings,
) -> None:
    async def no_wait(_: float) -> None:
        await asyncio.sleep(0)

    async with open_backend(settings) as (store, _):
        await _held_run(store)
        lossy = ReplyLost(store.events)
        live = LiveRuns().detached("r1", await store.events.after("r1", 0))
        outage = StoreOutage(within_s=5.0, sleep=no_wait)
        writer = RunWriter(
            replaced(store, events=lossy), "me", live, wake=lambda _: None, outage=outage
        )

        await writer.emit_all([NodeStarted(run_id="r1", node_id=n) for n in ("n1", "n2")])
        await writer.emit_all([NodeStarted(run_id="r1", node_id="n3")])
        stored = await store.events.after("r1", 0)

    assert lossy.batches == 1  # found landed, not sent again; the single event went alone
    assert [e.seq for e in stored] == [1, 2, 3, 4]
    assert [e.seq for e in live.events] == [1, 2, 3, 4]


def _node_of(event: Event) -> str | None:
    return getattr(event, "node_id", None)


@pytest.mark.parametrize("batched", [True, False])
async def test_a_round_s_starts_go_together_before_anything_their_jobs_say(
    batched: bool, make_engine: EngineMaker, tmp_path: Path
) -> None:
    log: list[tuple[int, Event]] = []  # (the write it came in, the event)
    writes = 0

    async def one(event: Event) -> None:
        nonlocal writes
        writes += 1
        log.append((writes, event))

    async def together(events: Sequence[Event]) -> None:
        nonlocal writes
        writes += 1
        log.extend((writes, event) for event in events)

    engine, _ = make_engine(TREE, tools=[lookup])
    params = RunParams(strategy="mcts", max_paths=3, max_concurrency=3)
    outcome = await engine.search(
        "task?", params, run_id="r1", sink=one, sink_all=together if batched else None
    )

    assert outcome.result.status == "done"
    started = {_node_of(e): write for write, e in log if e.type == "node_started"}
    # The plan's step is n1; the three steps proposed after it, n1.1 to n1.3.
    siblings = [write for node, write in started.items() if node and node.startswith("n1.")]
    assert len(siblings) == 3
    assert any(e.type == "tool_call" for _, e in log)
    if batched:
        assert len(set(siblings)) == 1  # the three siblings' starts: one write
        assert writes < len(log)
    else:
        assert writes == len(log)  # without a batch sink: each event alone, as before
    for write, event in log:
        node = _node_of(event)
        if event.type != "node_started" and node in started:
            assert started[node] <= write, event.type
