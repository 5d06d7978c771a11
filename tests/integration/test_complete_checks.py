"""A replanner that calls a path complete may still propose steps: checks of the answer. The
path ends and is answered; with more paths wanted, the checks become children of its last
node and the search may run them (a longer path, another candidate for the vote); with one
path wanted, they are dropped."""

from __future__ import annotations

from agents.params import RunParams
from testkit.event_log import EventLog
from testkit.fakes import executed_steps
from testkit.scenario import Scenario
from testkit.trace import tree_from_events
from tests.support.makers import EngineMaker

SCENARIO = Scenario(plan=["A", "B"], checks={"A": ["check A elsewhere"]})


async def test_with_paths_to_spare_the_checks_of_a_complete_path_run_as_a_second_path(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(SCENARIO)

    result = await engine.run(
        "t", RunParams(strategy="mcts", max_paths=2, max_concurrency=1), sink=events
    )

    assert result.status == "done"
    assert result.stop_reason == "max_paths"
    assert executed_steps(models) == ["A", "check A elsewhere"]
    nodes = {n["id"]: n for n in result.nodes}
    assert nodes["n1"]["complete"]
    assert nodes["n1"]["answer"] == "answer via A"
    assert nodes["n1.1"]["step"] == "check A elsewhere"
    assert nodes["n1.1"]["complete"]
    assert nodes["n1.1"]["answer"] == "answer via check A elsewhere"
    assert [e.node_id for e in events.of("path_completed")] == ["n1", "n1.1"]
    proposed = events.of("candidates")[0]
    assert proposed.complete
    assert [b.step for b in proposed.nodes] == ["check A elsewhere"]
    # The tree read back from the events says the same.
    rebuilt = tree_from_events(events)
    assert rebuilt["n1"]["complete"]
    assert rebuilt["n1.1"]["parent_id"] == "n1"


async def test_with_one_path_wanted_the_checks_are_dropped(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(SCENARIO)

    result = await engine.run("t", RunParams(strategy="mcts", max_paths=1), sink=events)

    assert result.status == "done"
    assert executed_steps(models) == ["A"]
    assert [n["id"] for n in result.nodes] == ["n1"]
    proposed = events.of("candidates")[0]
    assert proposed.complete
    assert proposed.nodes == []
    assert proposed.dropped == ["check A elsewhere"]


async def test_a_complete_path_without_checks_still_ends_the_search_when_nothing_is_left(
    make_engine: EngineMaker,
) -> None:
    engine, models = make_engine(Scenario(plan=["A", "B"]))

    result = await engine.run("t", RunParams(strategy="mcts", max_paths=3))

    assert result.stop_reason == "frontier_exhausted"
    assert executed_steps(models) == ["A"]
