"""Calls cut off by a stop still feed the cache: after `max_paths`, the model calls in flight
finish in the background (silently, within the grace), so an identical rerun costs nothing."""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain_core.tools import tool

from agents.jobs import settle_background
from agents.params import RunParams
from app.settings import Settings
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, Reply, last_done_step
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Results never reused (agents/reuse.py): a rerun searches again, through the model-call
    cache, which is what these tests are about."""
    return settings.model_copy(update={"result_reuse_s": 0})


# After A, two leaves. C's replanner call is slow: when B's path completes (max_paths=1), the
# expansion of C still has that call in flight.
TWO_LEAVES = Scenario(plan=["A"], replans={"A": ["B", "C"]})
SLOW_S = 0.3


async def _script(call: FakeCall) -> Reply:
    if call.role == "replanner" and last_done_step(call) == "C":
        await asyncio.sleep(SLOW_S)
    return TWO_LEAVES.reply(call)


async def test_an_identical_rerun_after_a_max_paths_stop_makes_no_model_call(
    make_engine: EngineMaker, events: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    engine, models = make_engine(_script)
    params = RunParams(strategy="mcts", max_paths=1)

    first = await engine.run("t", params, sink=events)
    assert first.stop_reason == "max_paths"
    assert first.metrics["jobs_after_stop"] == 1  # expand C, its replanner call in flight
    after_run = len(events)
    with caplog.at_level(logging.INFO, logger="agents.jobs"):
        await settle_background()
    calls = len(models.recorder.calls)
    second = await engine.run("t", params)

    assert len(events) == after_run  # the call that finished after the stop said nothing
    assert "after the stop: 1 model calls finished" in caplog.text
    assert len(models.recorder.calls) == calls
    assert second.metrics["llm_calls"] == 0
    assert second.answer == first.answer


@pytest.mark.parametrize(
    "params",
    [
        RunParams(strategy="mcts", max_paths=1, stop_grace_s=0),
        RunParams(strategy="mcts", max_paths=1, use_cache=False),
    ],
    ids=["no-grace", "no-cache"],
)
async def test_without_the_grace_the_rerun_pays_for_the_call_the_stop_cut_off(
    make_engine: EngineMaker, params: RunParams
) -> None:
    engine, models = make_engine(_script)

    first = await engine.run("t", params)
    await settle_background()
    second = await engine.run("t", params)

    assert first.metrics["jobs_after_stop"] == 0
    assert second.metrics["llm_calls"] >= 1
    cut_off = [c for c in models.recorder.by_role("replanner") if last_done_step(c) == "C"]
    assert len(cut_off) == 2  # asked again: the first reply never reached the cache


async def test_cancelling_the_run_also_cancels_calls_left_to_finish_after_the_stop(
    make_engine: EngineMaker, events: EventLog
) -> None:
    # Three leaves, two paths wanted: D's slow expansion is left to finish while the vote runs;
    # cancelling the run during the vote ends both at once.
    scenario = Scenario(plan=["A"], replans={"A": ["B", "C", "D"]})
    voting = asyncio.Event()
    interrupted: list[str] = []

    async def script(call: FakeCall) -> Reply:
        slow = call.role == "voter" or (call.role == "replanner" and last_done_step(call) == "D")
        if slow:
            if call.role == "voter":
                voting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                interrupted.append(call.role)
                raise
        return scenario.reply(call)

    engine, models = make_engine(script)
    run = asyncio.create_task(engine.run("t", RunParams(strategy="mcts", max_paths=2), sink=events))
    async with asyncio.timeout(5):
        await voting.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert sorted(interrupted) == ["replanner", "voter"]
    assert models.recorder.in_flight == 0
    assert events.types()[-1] == "cancelled"


async def test_a_step_left_to_finish_starts_no_tool_and_no_further_model_call(
    make_engine: EngineMaker, events: EventLog
) -> None:
    looked_up: list[str] = []

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        looked_up.append(query)
        return "found"

    # C's executor first asks for a tool, slowly: the stop comes while that call is in flight.
    scenario = Scenario(
        plan=["A"], replans={"A": ["B", "C"]}, tools={"C": ("lookup", {"query": "q"})}
    )

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and "Step to execute: C" in call.prompt:
            await asyncio.sleep(SLOW_S)
        return scenario.reply(call)

    engine, models = make_engine(script, tools=[lookup])

    result = await engine.run("t", RunParams(strategy="mcts", max_paths=1), sink=events)
    after_run = len(events)
    await settle_background()

    assert result.metrics["jobs_after_stop"] == 1
    assert looked_up == []  # the reply asked for the tool; the stopped job never ran it
    c_calls = [c for c in models.recorder.by_role("executor") if "Step to execute: C" in c.prompt]
    assert len(c_calls) == 1  # and made no second model call
    assert len(events) == after_run
