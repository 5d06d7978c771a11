"""Edge cases of the seed notebook's shape, each ending cleanly instead of crashing."""

from __future__ import annotations

from typing import Any

from agents.params import RunParams
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, Reply, step_to_execute
from testkit.scenario import Scenario, replan_reply
from tests.support.makers import EngineMaker


async def test_one_step_plan_completes_with_a_single_path(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(Scenario(plan=["only step"]))

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.status == "done"
    assert result.answer == "answer via only step"
    assert result.stop_reason == "frontier_exhausted"
    assert events.of("vote")[0].method == "single"
    assert models.recorder.by_role("voter") == []


async def test_empty_plan_is_retried_once_then_fails_with_a_clear_error(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(Scenario(plan=[]))

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.status == "failed"
    assert result.error == {"code": "plan", "message": "the planner produced no usable plan"}
    assert len(models.recorder.by_role("planner")) == 2
    assert "could not be used" in models.recorder.by_role("planner")[1].prompt
    assert events.types() == ["run_started", "error"]
    assert events.of("error")[0].code == "plan"


async def test_plan_steps_that_carry_fence_markers_are_not_run(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(Scenario(plan=[">>>NEXT STEP<<<", "only step"]))

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.status == "done"
    assert events.of("plan")[0].steps == ["only step"]
    assert [step_to_execute(c) for c in models.recorder.by_role("executor")] == ["only step"]


async def test_unparseable_plan_recovers_on_the_retry(make_engine: EngineMaker) -> None:
    replies = iter(["not json at all", {"steps": ["A"]}])

    def script(call: FakeCall) -> Reply:
        if call.role == "planner":
            return next(replies)
        return Scenario(plan=["A"]).reply(call)

    engine, _ = make_engine(script)

    result = await engine.run("task?", RunParams(strategy="mcts"))

    assert result.status == "done"
    assert result.answer == "answer via A"


async def test_a_replanner_that_never_completes_is_stopped_by_the_depth_limit(
    make_engine: EngineMaker,
) -> None:
    def script(call: FakeCall) -> Reply:
        if call.role == "replanner":
            return replan_reply([f"deeper {len(call.prompt)}"])
        return Scenario(plan=["A"]).reply(call)

    engine, models = make_engine(script)

    result = await engine.run("task?", RunParams(strategy="mcts", max_depth=4, max_paths=1))

    assert result.status == "done"
    assert max(n["depth"] for n in result.nodes) == 3
    assert len(result.path) == 4
    # The node at the depth limit completes without asking the replanner.
    assert len(models.recorder.by_role("replanner")) == 3


async def test_duplicate_candidates_are_dropped_against_siblings_and_ancestors(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(
        plan=["Find X", "Check Y"],
        replans={"Find X": ["1. Check Y", "check  y!", "find x", "Other", "  ", "Other"]},
    )
    engine, _ = make_engine(scenario)

    await engine.run("task?", RunParams(strategy="mcts", max_candidates=5), sink=events)

    proposed = events.of("candidates")[0]
    assert [n.step for n in proposed.nodes] == ["Check Y", "Other"]
    assert proposed.dropped == ["check  y!", "find x", "  ", "Other"]


async def test_candidates_are_never_padded_and_never_exceed_max_candidates(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(plan=["A"], replans={"A": ["B", "C", "D", "E"]})
    engine, _ = make_engine(scenario)

    await engine.run("task?", RunParams(strategy="mcts", max_candidates=2), sink=events)

    proposed = events.of("candidates")[0]
    assert [n.step for n in proposed.nodes] == ["B", "C"]
    assert proposed.dropped == ["D", "E"]


async def test_a_failing_node_is_marked_failed_and_the_run_goes_on_elsewhere(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(plan=["A"], replans={"A": ["bad", "good"]}, fail={"bad"})
    engine, _ = make_engine(scenario)

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    failed = [e for e in events.of("node_finished") if e.status == "failed"]
    assert [e.node_id for e in failed] == ["n1.1"]
    assert failed[0].error == "model call failed (RuntimeError)"
    assert result.status == "done"
    assert result.answer == "answer via good"
    assert result.metrics["nodes_by_status"] == {"done": 2, "failed": 1}


async def test_an_unparseable_vote_is_retried_then_falls_back_to_the_best_valued_path(
    make_engine: EngineMaker, events: EventLog
) -> None:
    unknown_choice = {"choice": "n99"}
    engine, models = make_engine(
        Scenario(plan=["A"], replans={"A": ["B", "C"]}, vote=lambda call: unknown_choice)
    )

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert len(models.recorder.by_role("voter")) == 2
    assert "choice must be one of" in models.recorder.by_role("voter")[1].prompt
    vote = events.of("vote")[0]
    assert vote.method == "fallback"
    # No scores: the tie goes to the first leaf in id order.
    assert vote.chosen_id == "n1.1"
    assert result.answer == "answer via B"


async def test_the_vote_schema_is_a_string_enum_of_the_candidate_ids(
    make_engine: EngineMaker,
) -> None:
    engine, models = make_engine(Scenario(plan=["A"], replans={"A": ["B", "C", "D"]}))

    await engine.run("task?", RunParams(strategy="mcts"))

    schema = models.recorder.by_role("voter")[0].schema
    assert schema is not None
    choice = schema["properties"]["choice"]
    assert choice["type"] == "string"
    assert sorted(choice["enum"]) == ["n1.1", "n1.2", "n1.3"]
    assert schema["required"] == ["choice"]


async def test_zero_candidates_gives_a_partial_best_effort_answer(
    make_engine: EngineMaker, events: EventLog
) -> None:
    def script(call: FakeCall) -> Reply:
        if call.role == "responder" and "stopped before it was complete" not in call.prompt:
            return RuntimeError("responder down")
        return Scenario(plan=["A", "B"], replans={"A": ["B"]}).reply(call)

    engine, _ = make_engine(script)

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.status == "done"
    assert result.partial is True
    assert result.chosen_id == "n1.1"
    assert result.answer == "answer via B"
    assert events.of("path_completed")[0].answer is None
    assert events.of("vote") == []
    assert events.of("done")[0].partial is True


async def test_no_successful_step_at_all_ends_with_an_error_event(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, _ = make_engine(Scenario(plan=["A"], fail={"A"}))

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.status == "failed"
    assert result.error == {"code": "no_result", "message": "no research step succeeded"}
    assert events.types()[-1] == "error"


async def test_tool_calls_are_recorded_on_the_node_and_emitted(
    make_engine: EngineMaker, events: EventLog
) -> None:
    from langchain_core.tools import tool

    @tool
    async def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    scenario = Scenario(plan=["A"], tools={"A": ("lookup", {"query": "q1"})})
    engine, models = make_engine(scenario, tools=[lookup])

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    root = result.nodes[0]
    assert [(t["name"], t["args"], t["ok"]) for t in root["tool_calls"]] == [
        ("lookup", {"query": "q1"}, True)
    ]
    call_event = events.of("tool_call")[0]
    assert (call_event.node_id, call_event.name, call_event.ok) == ("n1", "lookup", True)
    assert events.types().index("node_started") < events.types().index("tool_call")
    second_executor_call = models.recorder.by_role("executor")[1]
    assert "found q1" in second_executor_call.prompt
    assert models.recorder.by_role("executor")[0].tools == ["lookup"]


async def test_a_raising_tool_becomes_an_error_observation_not_a_failed_node(
    make_engine: EngineMaker, events: EventLog
) -> None:
    from langchain_core.tools import tool

    @tool
    async def flaky(query: str) -> str:
        """Always breaks."""
        raise ValueError("boom")

    scenario = Scenario(plan=["A"], tools={"A": ("flaky", {"query": "q"})})
    engine, _ = make_engine(scenario, tools=[flaky])

    result = await engine.run("task?", RunParams(strategy="mcts"), sink=events)

    assert result.nodes[0]["status"] == "done"
    assert result.nodes[0]["tool_calls"][0]["ok"] is False
    assert events.of("tool_call")[0].ok is False
    assert result.metrics["tool_errors"] == 1


def _calls(models: Any, role: str) -> list[str]:
    return [step_to_execute(c) for c in models.recorder.by_role(role)]
