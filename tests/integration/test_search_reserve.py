"""The search's reserve (`reserve=true`): candidates pruned by their judgement run after all
when nothing else is left, more paths are wanted and the budget can carry one to an answer;
never while anything else can run, never past the budget, never without the parameter."""

from __future__ import annotations

from typing import Any

from agents.events import EventSink, discard
from agents.params import RunParams
from agents.result import RunResult
from testkit.event_log import EventLog
from testkit.fakes import executed_steps
from testkit.scenario import Scenario
from testkit.trace import tree_from_events
from tests.support.makers import EngineMaker

# After A the replanner proposes B (judged fine), then C and D, both not viable, C the better.
SCENARIO = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D"], "B": [], "C": [], "D": []},
    not_viable={"C", "D"},
    priors={"B": 0.8, "C": 0.4, "D": 0.2},
)


async def _search(
    make_engine: EngineMaker, sink: EventSink = discard, **params: Any
) -> tuple[RunResult, list[str]]:
    """SCENARIO searched one step at a time with `params`: the result, and the steps executed
    in their order."""
    engine, models = make_engine(SCENARIO)
    result = await engine.run(
        "t", RunParams(strategy="mcts", max_concurrency=1, **params), sink=sink
    )
    return result, executed_steps(models)


async def test_pruned_candidates_run_best_first_once_the_frontier_is_empty(
    make_engine: EngineMaker, events: EventLog
) -> None:
    result, executed = await _search(make_engine, events, max_paths=3, reserve=True)

    assert result.status == "done"
    assert result.stop_reason == "max_paths"
    # B first (live), then the reserve: C (prior 0.4) before D (0.2).
    assert executed == ["A", "B", "C", "D"]
    assert [e.node_id for e in events.of("pruned")] == ["n1.2", "n1.3"]
    revived = events.of("revived")
    assert [e.node_id for e in revived] == ["n1.2", "n1.3"]
    assert "not viable" in revived[0].reason
    order = [e.type for e in events if e.type in ("revived", "path_completed")]
    assert order == ["path_completed", "revived", "path_completed", "revived", "path_completed"]
    nodes = {n["id"]: n for n in result.nodes}
    assert nodes["n1.2"]["status"] == "done"
    assert nodes["n1.2"]["error"] is None
    assert nodes["n1.2"]["answer"] == "answer via C"
    rebuilt = tree_from_events(events)
    assert rebuilt["n1.3"]["status"] == "done"


async def test_the_reserve_waits_for_the_paths_wanted_and_the_budget(
    make_engine: EngineMaker, events: EventLog
) -> None:
    two, executed = await _search(make_engine, events, max_paths=2, reserve=True)

    assert two.stop_reason == "max_paths"
    assert executed == ["A", "B", "C"]  # D stays pruned: two paths were enough

    # plan 1, A 1+1, B 1+1+1: 6 calls leave too few for another path and the vote's reserve.
    short, executed = await _search(make_engine, max_paths=3, max_llm_calls=7, reserve=True)

    assert short.stop_reason == "budget_llm_calls"
    assert "C" not in executed
    assert short.metrics["llm_calls"] <= 7


async def test_without_the_parameter_pruned_candidates_stay_pruned(
    make_engine: EngineMaker, events: EventLog
) -> None:
    result, executed = await _search(make_engine, events, max_paths=3)

    assert result.stop_reason == "frontier_exhausted"
    assert executed == ["A", "B"]
    assert events.of("revived") == []
