"""Whole runs of the engine graph with scripted models."""

from __future__ import annotations

from agents.fencing import fence
from agents.params import RunParams
from testkit.event_log import EventLog
from testkit.fakes import step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker


async def test_three_path_run_votes_once_and_returns_the_chosen_answer(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(
        plan=["A", "B"],
        replans={"A": ["B", "B2", "B3"]},
        vote=lambda call: {"choice": next(i for i in call.enum if i == "n1.2"), "reason": "best"},
    )
    engine, models = make_engine(scenario)

    result = await engine.run("task?", RunParams(strategy="mcts", max_paths=3), sink=events)

    assert result.status == "done"
    assert result.stop_reason == "max_paths"
    assert result.answer == "answer via B2"
    assert result.chosen_id == "n1.2"
    assert result.path == ["n1", "n1.2"]
    assert events.types()[0] == "run_started"
    assert events.types()[-1] == "done"
    assert events.types().count("vote") == 1
    assert events.types().count("done") == 1
    assert len(events.of("path_completed")) == 3
    assert len(models.recorder.by_role("voter")) == 1
    executed = sorted(step_to_execute(c) for c in models.recorder.by_role("executor"))
    assert executed == ["A", "B", "B2", "B3"]
    assert result.metrics["llm_calls_by_role"] == {
        "executor": 4,  # no evaluator call: the replanner judged the candidates
        "planner": 1,
        "replanner": 4,
        "responder": 3,
        "voter": 1,
    }
    assert result.metrics["paths_completed"] == 3
    assert result.metrics["candidates_scored"] == 3
    assert "candidate_batches" not in result.metrics


async def test_root_result_reaches_every_later_step(make_engine: EngineMaker) -> None:
    engine, models = make_engine(Scenario(plan=["A", "B", "C"], replans={"A": ["B"], "B": ["C"]}))

    await engine.run("task?", RunParams(strategy="mcts", max_paths=1))

    c_prompt = next(
        c.prompt for c in models.recorder.by_role("executor") if step_to_execute(c) == "C"
    )
    assert f"Step 1: A\nResult 1:\n{fence('result of A')}" in c_prompt
    assert f"Step 2: B\nResult 2:\n{fence('result of B')}" in c_prompt
    b_prompt = next(
        c.prompt for c in models.recorder.by_role("executor") if step_to_execute(c) == "B"
    )
    assert "Planned after this step (do not do them now):\n- C" in b_prompt
