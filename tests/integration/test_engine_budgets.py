"""Every budget ends the run with its stop reason, checked before the call that would break it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from agents.params import RunParams
from agents.result import RunResult
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, FakeModels, Reply, executed_steps, step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

WIDE = Scenario(plan=["A"], replans={"A": ["B", "C", "D"], "B": ["B1"], "C": ["C1"]})
WideRun = Callable[..., Awaitable[tuple[RunResult, FakeModels]]]


@pytest.fixture
def run_wide(make_engine: EngineMaker, events: EventLog) -> WideRun:
    """Runs WIDE with the given parameters into `events`; the result and the models."""

    async def run(**params: Any) -> tuple[RunResult, FakeModels]:
        engine, models = make_engine(WIDE)
        return await engine.run(
            "task?", RunParams(**{"strategy": "mcts", **params}), sink=events
        ), models

    return run


async def test_max_paths_stops_the_search_when_enough_answers_exist(
    run_wide: WideRun, events: EventLog
) -> None:
    result, _ = await run_wide(max_paths=1, max_concurrency=1)

    assert result.stop_reason == "max_paths"
    assert len(events.of("path_completed")) == 1
    assert events.types()[-1] == "done"


async def test_max_nodes_caps_the_tree_and_is_the_stop_reason(
    run_wide: WideRun, events: EventLog
) -> None:
    result, _ = await run_wide(max_nodes=3, max_paths=10)

    assert len(result.nodes) == 3
    assert result.stop_reason == "max_nodes"
    assert events.of("candidates")[0].dropped == ["D"]
    assert result.status == "done"


async def test_llm_call_budget_is_never_exceeded_and_keeps_one_call_for_the_vote(
    run_wide: WideRun, events: EventLog
) -> None:
    result, models = await run_wide(max_llm_calls=6, max_paths=10)

    assert result.stop_reason == "budget_llm_calls"
    assert len(models.recorder.calls) <= 6
    assert result.metrics["llm_calls"] == len(models.recorder.calls)
    assert result.status == "done"
    assert events.types()[-1] == "done"


async def test_token_budget_stops_before_the_next_call(
    make_engine: EngineMaker, events: EventLog
) -> None:
    def script(call: FakeCall) -> Reply:
        reply = WIDE.reply(call)
        if call.role == "executor" and isinstance(reply, AIMessage):
            reply.usage_metadata = {"input_tokens": 700, "output_tokens": 100, "total_tokens": 800}
        return reply

    engine, models = make_engine(script)

    result = await engine.run(
        "task?", RunParams(strategy="mcts", max_tokens=1000, max_paths=10), sink=events
    )

    assert result.stop_reason == "budget_tokens"
    executed = executed_steps(models)
    # A, then B/C/D start together (concurrency 4); whatever else ran, nothing started after.
    assert executed[0] == "A"
    assert len(executed) <= 4
    assert result.metrics["input_tokens"] + result.metrics["output_tokens"] >= 1000


async def test_deadline_cancels_in_flight_steps_and_still_answers(
    make_engine: EngineMaker, events: EventLog
) -> None:
    never = asyncio.Event()

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) != "A":
            await never.wait()
        return WIDE.reply(call)

    engine, _ = make_engine(script)

    result = await engine.run("task?", RunParams(strategy="mcts", deadline_s=0.2), sink=events)

    assert result.stop_reason == "deadline"
    cancelled = [e.node_id for e in events.of("node_finished") if e.status == "cancelled"]
    assert sorted(cancelled) == ["n1.1", "n1.2", "n1.3"]
    assert result.partial is True
    assert result.chosen_id == "n1"
    assert events.types()[-1] == "done"
