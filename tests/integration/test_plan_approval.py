"""Plan approval in the engine (the real graph, scripted models, a real SQLite checkpointer):
with `approve_plan` the run stops after the planner with an `interrupt` event and makes no
call until resumed; an engine made afresh on the same checkpoint file goes on with the plan
approved, edited, or rejected (then it ends cancelled without a search call)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.engine import Engine
from agents.errors import AwaitingApproval
from agents.params import RunParams
from app.settings import Settings
from testkit.event_log import EventLog
from testkit.fakes import FakeModels
from testkit.scenario import Scenario

TREE = Scenario(plan=["A", "B"], replans={"A": ["B"]})
PARAMS = RunParams(approve_plan=True, max_paths=1)


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        yield saver


async def _waiting(settings: Settings, saver: AsyncSqliteSaver, events: EventLog) -> FakeModels:
    """A run `r1` stopped at its plan; the models it used."""
    models = FakeModels(TREE)
    engine = Engine(settings=settings, models=models, tools=[], checkpointer=saver)
    with pytest.raises(AwaitingApproval) as stopped:
        await engine.run("task?", PARAMS, run_id="r1", sink=events)
    assert stopped.value.event.steps == ["A", "B"]
    return models


def _fresh(settings: Settings, saver: AsyncSqliteSaver) -> tuple[Engine, FakeModels]:
    models = FakeModels(TREE)
    return Engine(settings=settings, models=models, tools=[], checkpointer=saver), models


async def test_the_run_stops_after_the_planner_with_the_plan_in_an_interrupt_event(
    settings: Settings, saver: AsyncSqliteSaver, events: EventLog
) -> None:
    models = await _waiting(settings, saver, events)
    snapshot = await Engine(
        settings=settings, models=models, tools=[], checkpointer=saver
    ).graph.aget_state({"configurable": {"thread_id": "r1"}})

    assert [c.role for c in models.recorder.calls] == ["planner"]
    assert events.types()[-2:] == ["plan", "interrupt"]
    assert events.of("interrupt")[0].steps == ["A", "B"]
    assert snapshot.next == ("approve",)
    assert snapshot.interrupts[0].value == {"kind": "plan", "steps": ["A", "B"]}


async def test_an_approved_plan_runs_as_is_after_a_restart(
    settings: Settings, saver: AsyncSqliteSaver, events: EventLog
) -> None:
    await _waiting(settings, saver, events)
    engine, models = _fresh(settings, saver)

    result = await engine.resume("r1", sink=events, answer={"action": "approve", "by": "alice"})

    assert result.status == "done"
    assert "planner" not in [c.role for c in models.recorder.calls]
    assert [n["step"] for n in result.nodes] == ["A", "B"]
    reviewed = events.of("plan_reviewed")[0]
    assert (reviewed.action, reviewed.steps, reviewed.by) == ("approve", ["A", "B"], "alice")


async def test_an_edited_plan_is_the_one_the_search_follows(
    settings: Settings, saver: AsyncSqliteSaver, events: EventLog
) -> None:
    await _waiting(settings, saver, events)
    engine, _ = _fresh(settings, saver)

    result = await engine.resume("r1", sink=events, answer={"action": "edit", "steps": ["C"]})

    assert result.status == "done"
    assert [n["step"] for n in result.nodes] == ["C"]
    assert result.answer == "answer via C"
    assert events.of("plan_reviewed")[0].root.step == "C"


async def test_a_rejected_plan_ends_cancelled_without_a_search_call(
    settings: Settings, saver: AsyncSqliteSaver, events: EventLog
) -> None:
    await _waiting(settings, saver, events)
    engine, models = _fresh(settings, saver)

    result = await engine.resume("r1", sink=events, answer={"action": "reject"})

    assert result.status == "cancelled"
    assert models.recorder.calls == []
    assert events.types()[-1] == "cancelled"
    assert events.of("cancelled")[0].reason == "the plan was rejected"


async def test_resumed_without_an_answer_the_run_stops_at_its_plan_again(
    settings: Settings, saver: AsyncSqliteSaver, events: EventLog
) -> None:
    await _waiting(settings, saver, events)
    engine, models = _fresh(settings, saver)

    with pytest.raises(AwaitingApproval):
        await engine.resume("r1", sink=events)

    assert models.recorder.calls == []
    assert events.types().count("interrupt") == 2
