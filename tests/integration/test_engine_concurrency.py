"""Parallel scheduling: concurrency reaches its limit, never exceeds it, and a slow branch does
not hold back the others. Measured on the fakes' in-flight counter; nothing sleeps."""

from __future__ import annotations

import asyncio

import pytest

from agents.params import RunParams
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, Reply, step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

FAN = Scenario(plan=["A"], replans={"A": ["B", "C", "D", "E"]})


@pytest.mark.parametrize("limit", [1, 2, 4])
async def test_concurrency_reaches_max_concurrency_and_never_exceeds_it(
    make_engine: EngineMaker, limit: int
) -> None:
    full = asyncio.Event()
    holder: dict[str, object] = {}

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) != "A":
            recorder = holder["recorder"]
            if recorder.in_flight >= limit:  # type: ignore[attr-defined]
                full.set()
            async with asyncio.timeout(5):
                await full.wait()
        return FAN.reply(call)

    engine, models = make_engine(script)
    holder["recorder"] = models.recorder

    result = await engine.run("task?", RunParams(max_candidates=4, max_concurrency=limit))

    assert result.status == "done"
    assert models.recorder.max_in_flight == limit


async def test_a_slow_branch_does_not_hold_back_the_others(
    make_engine: EngineMaker, events: EventLog
) -> None:
    slow_released = asyncio.Event()

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) == "B":
            await slow_released.wait()
        return FAN.reply(call)

    engine, _ = make_engine(script)

    result = await engine.run("task?", RunParams(max_candidates=4, max_paths=3), sink=events)

    completed = [e.node_id for e in events.of("path_completed")]
    assert sorted(completed) == ["n1.2", "n1.3", "n1.4"]
    assert result.stop_reason == "max_paths"
    b_finished = [e for e in events.of("node_finished") if e.node_id == "n1.1"]
    assert [e.status for e in b_finished] == ["cancelled"]
