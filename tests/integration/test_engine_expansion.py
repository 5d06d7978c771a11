"""One expansion: the replanner proposes and judges in one call, the evaluator judges the path's
progress at the same time, and evaluate=false drops both the judgements and the evaluator."""

from __future__ import annotations

import asyncio

from agents.params import RunParams
from testkit.fakes import FakeCall, Reply, step_to_execute
from testkit.scenario import Scenario
from tests.conftest import EngineMaker, EventLog

TREE = Scenario(
    plan=["A"],
    replans={"A": ["good", "weak", "off topic"]},
    priors={"good": 0.8, "weak": 0.1, "off topic": 0.9},
    not_viable={"off topic"},
)


async def test_progress_is_judged_while_the_replanner_proposes(make_engine: EngineMaker) -> None:
    # Each call of the first expansion waits until the other one has started: done one after
    # the other, neither would ever return.
    started = {"evaluator": asyncio.Event(), "replanner": asyncio.Event()}
    other = {"evaluator": "replanner", "replanner": "evaluator"}

    async def script(call: FakeCall) -> Reply:
        if call.role in started and "Step 2:" not in call.prompt:
            started[call.role].set()
            async with asyncio.timeout(5):
                await started[other[call.role]].wait()
        return TREE.reply(call)

    engine, models = make_engine(script)

    result = await engine.run("t", RunParams(max_concurrency=1))

    assert result.status == "done"
    assert models.recorder.max_in_flight == 2


async def test_each_expansion_costs_one_replanner_and_one_evaluator_call(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(TREE)

    result = await engine.run("t", RunParams(min_score=0.2), sink=events)

    expansions = len(events.of("candidates"))
    assert len(models.recorder.by_role("replanner")) == expansions
    assert len(models.recorder.by_role("evaluator")) == expansions
    (proposal,) = [e for e in events.of("candidates") if e.parent_id == "n1"]
    assert [(b.step, b.score, b.reason) for b in proposal.nodes] == [
        ("good", 0.8, "judged good"),
        ("weak", 0.1, "judged weak"),
        ("off topic", 0.9, "judged off topic"),
    ]
    assert result.metrics["candidates_scored"] == 3


async def test_without_evaluation_there_are_no_priors_no_pruning_and_no_evaluator_calls(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(TREE)

    result = await engine.run("t", RunParams(evaluate=False, max_paths=10), sink=events)

    assert models.recorder.by_role("evaluator") == []
    assert events.of("pruned") == []
    assert events.of("evaluated") == []
    children = [n for n in result.nodes if n["parent_id"] == "n1"]
    assert [(n["prior"], n["status"]) for n in children] == [(None, "done")] * 3
    assert sorted(step_to_execute(c) for c in models.recorder.by_role("executor")) == [
        "A",
        "good",
        "off topic",
        "weak",
    ]
    assert result.metrics["candidates_scored"] == 0


async def test_a_reply_in_the_older_next_steps_shape_still_expands_unjudged(
    make_engine: EngineMaker,
) -> None:
    def script(call: FakeCall) -> Reply:
        if call.role == "replanner" and "Step 2:" not in call.prompt:
            return {"complete": False, "next_steps": ["x", "y"]}
        return TREE.reply(call)

    engine, _ = make_engine(script)

    result = await engine.run("t", RunParams(max_paths=10))

    children = [n for n in result.nodes if n["parent_id"] == "n1"]
    assert [(n["step"], n["prior"]) for n in children] == [("x", None), ("y", None)]


async def test_the_voter_sees_each_judged_candidates_value_and_the_vote_event_lists_them(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(
        plan=["A"],
        replans={"A": ["B", "C"]},
        priors={"B": 0.6, "C": 0.2},
        values={"B": 0.8, "C": 0.4},
    )
    engine, models = make_engine(scenario)

    await engine.run("t", RunParams(min_score=0.0), sink=events)

    (vote,) = events.of("vote")
    assert vote.values == {"n1.1": 0.7, "n1.2": 0.3}  # (prior + progress) / 2
    (ballot,) = models.recorder.by_role("voter")
    assert "Search value of this path (0 to 1, from the judged progress of its steps): 0.70" in (
        ballot.prompt
    )
