"""The search's pure fold: a job's outcome becomes node updates and queued events, no I/O."""

from __future__ import annotations

import asyncio

from agents.jobs import ExecOutcome, ExpandOutcome, Job, Judged, RespondOutcome
from agents.nodes.fold import TreeFold, candidates_observation, prune_reason
from agents.params import RunParams
from agents.state import NodeRecord, new_node
from agents.steering import SteerCommand, steer
from calls.errors import BudgetExhausted

METRICS = {"llm_calls": 3}


def _fold(**params: object) -> TreeFold:
    root = new_node(parent=None, index=1, step="A", planned=["B"])
    nodes: dict[str, NodeRecord] = {"n1": root}
    return TreeFold(run_id="r1", params=RunParams(**params), nodes=nodes)  # type: ignore[arg-type]


def _executed(fold: TreeFold, node_id: str = "n1") -> None:
    fold.started(Job("execute", node_id))
    fold.apply(Job("execute", node_id), ExecOutcome(True, "found", None, 0.1), METRICS)
    fold.take_events()


def _expanded(outcome: ExpandOutcome, **params: object) -> TreeFold:
    """A fold (with `params`) whose root ran and was then expanded as `outcome` says."""
    fold = _fold(**params)
    _executed(fold)
    fold.apply(Job("expand", "n1"), outcome, METRICS)
    return fold


def test_a_started_step_is_running_and_announced() -> None:
    fold = _fold()

    fold.started(Job("execute", "n1"))

    assert fold.nodes["n1"]["status"] == "running"
    assert [e.type for e in fold.take_events()] == ["node_started"]
    assert fold.take_events() == []  # taken once


def test_a_finished_step_is_stored_and_reported_with_the_metrics() -> None:
    fold = _fold()

    fold.apply(Job("execute", "n1"), ExecOutcome(True, "found it", None, 0.5), METRICS)

    assert fold.changed["n1"]["status"] == "done"
    assert fold.changed["n1"]["result"] == "found it"
    (event,) = fold.take_events()
    assert (event.type, event.status, event.metrics) == ("node_finished", "done", METRICS)


def test_an_expansion_backs_up_progress_creates_judged_children_and_prunes_weak_ones() -> None:
    outcome = ExpandOutcome(
        complete=False,
        steps=["good", "weak"],
        dropped=["A"],
        progress=Judged(score=0.6, viable=True, reason="halfway"),
        scores=[Judged(0.8, True, "direct"), Judged(0.1, True, "tangent")],
    )

    fold = _expanded(outcome, min_score=0.3)

    nodes = fold.nodes
    assert (nodes["n1"]["score"], nodes["n1"]["value_sum"], nodes["n1"]["visits"]) == (0.6, 0.6, 1)
    assert (nodes["n1.1"]["prior"], nodes["n1.1"]["status"]) == (0.8, "pending")
    assert (nodes["n1.2"]["prior"], nodes["n1.2"]["status"]) == (0.1, "pruned")
    assert nodes["n1"]["expanded"] is True
    assert nodes["n1"]["complete"] is False
    events = fold.take_events()
    assert [e.type for e in events] == ["evaluated", "candidates", "pruned"]
    assert [(b.node_id, b.score, b.reason) for b in events[1].nodes] == [
        ("n1.1", 0.8, "direct"),
        ("n1.2", 0.1, "tangent"),
    ]
    assert events[1].dropped == ["A"]


def test_a_path_whose_every_child_is_pruned_is_complete() -> None:
    fold = _expanded(ExpandOutcome(False, ["x"], [], scores=[Judged(0.9, False, "off topic")]))

    assert fold.nodes["n1"]["complete"] is True
    assert fold.nodes["n1.1"]["error"] == "not viable: off topic"


def test_unjudged_children_have_no_prior_and_are_never_pruned() -> None:
    fold = _expanded(ExpandOutcome(False, ["x", "y"], []), min_score=0.9)

    assert [(fold.nodes[i]["prior"], fold.nodes[i]["status"]) for i in ("n1.1", "n1.2")] == [
        (None, "pending"),
        (None, "pending"),
    ]


def test_children_beyond_max_nodes_are_dropped_and_the_tree_is_capped() -> None:
    fold = _expanded(ExpandOutcome(False, ["x", "y"], []), max_nodes=2)

    assert sorted(fold.nodes) == ["n1", "n1.1"]
    assert fold.capped is True
    assert fold.take_events()[-1].dropped == ["y"]


def test_an_answer_completes_the_path_and_counts_towards_max_paths() -> None:
    fold = _fold(max_paths=1)
    _executed(fold)

    fold.apply(Job("respond", "n1"), RespondOutcome("42", None), METRICS)

    assert fold.completed_paths() == 1
    assert fold.stop_reason() == "max_paths"
    event, ready = fold.take_events()
    assert (event.type, event.path, event.answer) == ("path_completed", ["n1"], "42")
    # The first path's answer is also the run's first answer.
    assert (ready.type, ready.node_id, ready.answer) == ("answer_ready", "n1", "42")


def test_early_stop_needs_a_judged_leaf_whose_value_reaches_the_satisfaction() -> None:
    fold = _fold(satisfaction=0.7, max_paths=5)
    fold.nodes["n1"] |= {"answer": "a", "prior": 0.9}
    assert fold.stop_reason() is None  # only its prior speaks for it: not judged

    fold.nodes["n1"] |= {"value_sum": 0.6, "visits": 1}  # value (0.9 + 0.6) / 2 = 0.75

    assert fold.stop_reason() == "early_stop"


def test_a_budget_refusal_cancels_the_step_and_marks_the_budget_hit() -> None:
    fold = _fold()

    fold.apply(Job("execute", "n1"), BudgetExhausted("budget_llm_calls"), METRICS)

    assert fold.budget_hit == "budget_llm_calls"
    assert (fold.nodes["n1"]["status"], fold.nodes["n1"]["error"]) == (
        "cancelled",
        "budget exhausted",
    )


def test_a_cancelled_expansion_leaves_the_tree_alone() -> None:
    fold = _fold()
    _executed(fold)

    fold.apply(Job("expand", "n1"), asyncio.CancelledError(), METRICS)

    assert fold.nodes["n1"]["expanded"] is False
    assert fold.take_events() == []


def test_a_crashed_expansion_ends_the_path_with_what_it_found() -> None:
    fold = _fold()
    _executed(fold)

    fold.apply(Job("expand", "n1"), RuntimeError("bug"), METRICS)

    assert (fold.nodes["n1"]["expanded"], fold.nodes["n1"]["complete"]) == (True, True)


def test_prune_reasons_name_the_rule_and_the_judges_reason() -> None:
    assert prune_reason(None, 0.5) is None
    assert prune_reason(Judged(0.9, False, ""), 0.5) == "not viable"
    assert prune_reason(Judged(0.1, True, "weak"), 0.5) == "score 0.10 below 0.50: weak"
    assert prune_reason(Judged(0.5, True, ""), 0.5) is None


def test_an_expansion_without_a_progress_score_is_observed_through_its_best_live_candidate() -> (
    None
):
    judged = [Judged(0.1, True, ""), Judged(0.7, True, ""), Judged(0.9, False, "off topic")]
    fold = _expanded(
        ExpandOutcome(False, ["weak", "good", "off"], [], scores=judged), min_score=0.3
    )

    # 0.9 is not viable and 0.1 is pruned: the best live score, 0.7, is one visit of n1.
    assert (fold.nodes["n1"]["score"], fold.nodes["n1"]["value_sum"]) == (None, 0.7)
    assert fold.nodes["n1"]["visits"] == 1
    events = fold.take_events()
    assert [e.type for e in events] == ["candidates", "pruned", "pruned"]
    assert events[0].observed == 0.7
    assert events[0].values == {"n1": 0.7, "n1.1": 0.1, "n1.2": 0.7, "n1.3": 0.9}


def test_an_expansion_with_only_unscored_or_no_live_candidates_backs_nothing_up() -> None:
    assert candidates_observation(None, [None, None]) is None
    assert candidates_observation(None, []) is None
    assert candidates_observation(Judged(0.4, True, ""), [Judged(0.8, True, "")]) is None
    assert candidates_observation(None, [None, Judged(0.3, True, ""), Judged(0.6, True, "")]) == 0.6


def test_events_that_move_values_carry_the_engines_node_value_up_the_path() -> None:
    judged = [Judged(0.8, True, ""), Judged(0.4, True, "")]
    fold = _expanded(ExpandOutcome(False, ["B", "C"], [], scores=judged))
    fold.take_events()

    fold.started(Job("execute", "n1.1"))
    fold.apply(Job("execute", "n1.1"), ExecOutcome(False, None, "boom", 0.1), METRICS)

    # B failed: the root is worth its best live child now, C.
    finished = fold.take_events()[-1]
    assert finished.type == "node_finished"
    assert finished.values == {"n1": 0.4, "n1.1": 0.8}


def test_the_reserve_revives_the_best_judged_prune_and_never_a_callers() -> None:
    judged = [Judged(0.2, True, "tangent"), Judged(0.1, True, ""), Judged(0.9, True, "")]
    fold = _expanded(
        ExpandOutcome(False, ["weak", "weaker", "mine"], [], scores=judged), min_score=0.3
    )
    # The caller prunes the one live candidate, n1.3 (as agents/steering.py does).
    steered = steer(fold.nodes, SteerCommand(id=1, command="prune", node_id="n1.3"), fold.params)
    for record in steered.updates.values():
        fold.put(record)
    fold.take_events()

    assert [fold.revive(), fold.revive(), fold.revive()] == ["n1.1", "n1.2", None]
    assert fold.nodes["n1.1"]["status"] == "pending"
    assert fold.nodes["n1.1"]["error"] is None
    assert fold.nodes["n1.3"]["status"] == "pruned"
    events = fold.take_events()
    assert [(e.type, e.node_id) for e in events] == [("revived", "n1.1"), ("revived", "n1.2")]
    assert "score 0.20 below 0.30" in events[0].reason
