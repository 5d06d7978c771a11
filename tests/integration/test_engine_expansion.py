"""One expansion: the replanner proposes and judges in one call; the evaluator judges the path's
progress only where that can change the search (a path end under early stop, unscored
proposals); evaluate=false drops both the judgements and the evaluator."""

from __future__ import annotations

import pytest

from agents.params import RunParams
from testkit.event_log import EventLog
from testkit.fakes import FakeCall, Reply, last_done_step, step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

TREE = Scenario(
    plan=["A"],
    replans={"A": ["good", "weak", "off topic"]},
    priors={"good": 0.8, "weak": 0.1, "off topic": 0.9},
    not_viable={"off topic"},
)


async def test_an_expansion_with_scored_candidates_costs_one_replanner_call_and_no_evaluator_call(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(TREE)

    result = await engine.run("t", RunParams(strategy="mcts", min_score=0.2), sink=events)

    expansions = len(events.of("candidates"))
    replanned = models.recorder.by_role("replanner")
    assert expansions == len(replanned) > 1
    assert models.recorder.by_role("evaluator") == []
    (proposal,) = [e for e in events.of("candidates") if e.parent_id == "n1"]
    assert [(b.step, b.score, b.reason) for b in proposal.nodes] == [
        ("good", 0.8, "judged good"),
        ("weak", 0.1, "judged weak"),
        ("off topic", 0.9, "judged off topic"),
    ]
    # The expansion is observed through its best live candidate ("off topic" is not viable).
    assert proposal.observed == 0.8
    assert proposal.values == {"n1": 0.8, "n1.1": 0.8, "n1.2": 0.1, "n1.3": 0.9}
    root = next(n for n in result.nodes if n["id"] == "n1")
    assert (root["visits"], root["value_sum"]) == (1, 0.8)
    assert result.metrics["candidates_scored"] == 3


@pytest.mark.parametrize(
    ("reserve", "revived", "ends"),
    [
        pytest.param(False, [], ["n1.1"], id="one_path"),
        # "good" ends its path; the reserve then revives "off topic" and "weak" (pruned), whose
        # ends are judged too: three ends, three judgements, nothing else.
        pytest.param(True, ["n1.3", "n1.2"], ["n1.1", "n1.2", "n1.3"], id="revived_paths_too"),
    ],
)
async def test_with_early_stop_on_the_path_ends_are_judged_and_nothing_else(
    make_engine: EngineMaker, events: EventLog, reserve: bool, revived: list[str], ends: list[str]
) -> None:
    engine, models = make_engine(TREE)
    params = RunParams(strategy="mcts", min_score=0.2, satisfaction=0.99, reserve=reserve)

    result = await engine.run("t", params, sink=events)

    judged = sorted(e.node_id for e in events.of("evaluated"))
    assert [e.node_id for e in events.of("revived")] == revived
    assert judged == sorted(n["id"] for n in result.nodes if n["complete"]) == ends
    assert len(models.recorder.by_role("evaluator")) == len(ends)


PLANNED = Scenario(plan=["A", "B"])


def _first_replan_fails(call: FakeCall) -> Reply:
    """`PLANNED`, but the replan after "A" fails: the path follows its plan, and "B" is
    proposed unscored."""
    if call.role == "replanner" and last_done_step(call) == "A":
        return RuntimeError("scripted replanner failure")
    return PLANNED.reply(call)


async def test_unscored_proposals_are_observed_through_the_evaluator(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(_first_replan_fails)

    await engine.run("t", RunParams(strategy="mcts", max_paths=10), sink=events)

    (evaluated,) = events.of("evaluated")
    assert evaluated.node_id == "n1"
    assert len(models.recorder.by_role("evaluator")) == 1


async def test_without_evaluation_there_are_no_priors_no_pruning_and_no_evaluator_calls(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(TREE)

    result = await engine.run(
        "t", RunParams(strategy="mcts", evaluate=False, max_paths=10), sink=events
    )

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


# Two judged candidates: B better than C by its prior and its value.
JUDGED = Scenario(
    plan=["A"], replans={"A": ["B", "C"]}, priors={"B": 0.6, "C": 0.2}, values={"B": 0.8, "C": 0.4}
)


async def test_the_voter_sees_each_judged_candidates_value_and_the_vote_event_lists_them(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(JUDGED)

    # With early stop on, every path end is judged (and 0.99 is never reached).
    await engine.run("t", RunParams(strategy="mcts", min_score=0.0, satisfaction=0.99), sink=events)

    (vote,) = events.of("vote")
    # (prior + progress) / 2, blended with the answers' groundedness (0: the scripted answers
    # cite nothing): 0.7 * V + 0.3 * 0
    assert vote.values == {"n1.1": 0.49, "n1.2": 0.21}
    (ballot,) = models.recorder.by_role("voter")
    assert (
        "Value of this candidate (0 to 1, from the scores of its steps and its groundedness): 0.49"
        in (ballot.prompt)
    )
