"""The anytime search's rules over a tree: the first path, the model-free assessment of its
answer, and where the budget goes next (depth before breadth, the weakest step first)."""

from __future__ import annotations

from agents.anytime import (
    assess,
    first_answered,
    first_path,
    greedy_phase,
    next_move,
    on_first_path,
    weak_steps,
)
from agents.grounding.verify import Grounding
from agents.params import RunParams
from agents.state import NodeRecord
from tests.unit.search.trees import answered, cited, done, grounding

TASK = "Which river flows through the capital of France?"


def _chain(
    second_evidence: list[tuple[str, str]], found: Grounding | None = None
) -> dict[str, NodeRecord]:
    root = done(
        None, 1, "Find the capital of France", [("France", "Paris is the capital of France.")]
    )
    leaf = done(root, 1, "Find its river", second_evidence)
    answered(leaf, "The Seine.[1]", found or grounding(1.0, [cited("n1.1", "The Seine flows")]))
    return {n["id"]: n for n in (root, leaf)}


def test_the_first_path_is_the_first_child_at_every_level() -> None:
    assert on_first_path("n1")
    assert on_first_path("n1.1.1")
    assert not on_first_path("n1.2")
    assert not on_first_path("n2")
    assert not on_first_path("n1.1.3")


def test_the_greedy_phase_lasts_until_the_first_path_has_an_answer() -> None:
    nodes = _chain([("Paris", "The Seine flows through Paris.")])
    leaf = nodes["n1.1"]
    leaf["answer"] = None

    assert greedy_phase(nodes)
    assert first_answered(nodes) is None
    leaf["answer"] = "The Seine."
    assert not greedy_phase(nodes)
    assert first_answered(nodes) is leaf
    assert [n["id"] for n in first_path(nodes)] == ["n1", "n1.1"]


def test_a_failed_first_path_ends_the_greedy_phase() -> None:
    nodes = _chain([])
    nodes["n1.1"] |= {"answer": None, "status": "failed"}

    assert not greedy_phase(nodes)


def test_a_grounded_complete_answer_with_every_entity_found_is_sufficient() -> None:
    nodes = _chain([("Paris", "The Seine flows through Paris.")])

    found = assess(TASK, nodes, nodes["n1.1"])

    assert found.sufficient
    assert found.reasons() == []
    assert found.signals() == []
    assert next_move(TASK, nodes, RunParams(), []) is not None  # a move exists; the stop rule
    # is what keeps the budget (agents/nodes/fold.py)


def test_each_weakness_signal_is_seen_without_a_model() -> None:
    unsupported = grounding(0.5, [cited("n1.1", "The Seine flows")], ["It is long."], rejected=1)
    nodes = _chain([], unsupported)

    found = assess(
        "Which river flows through the capital of France and Belgium?", nodes, nodes["n1.1"]
    )

    assert not found.sufficient
    assert found.unsupported == 1
    assert found.rejected == 1
    assert found.empty_steps == ["n1.1"]  # its search brought nothing new
    assert found.missing_entities == ["Belgium"]
    assert not found.grounded
    # Each signal named, in the order its reason is given.
    assert found.signals() == [
        "ungrounded",
        "unsupported",
        "rejected",
        "missing_entities",
        "empty_steps",
    ]
    assert len(found.reasons()) == len(found.signals())


def test_a_step_that_only_repeats_earlier_evidence_brought_nothing_new() -> None:
    nodes = _chain([("France", "Paris is the capital of France.")])

    assert assess(TASK, nodes, nodes["n1.1"]).empty_steps == ["n1.1"]


def test_undone_planned_steps_run_before_any_alternative() -> None:
    nodes = _chain([("Paris", "The Seine flows through Paris.")])
    nodes["n1.1"]["planned"] = ["Check the river's length"]

    move = next_move(TASK, nodes, RunParams(), [])

    assert move is not None
    assert (move.kind, move.node_id, move.step) == ("deepen", "n1.1", "Check the river's length")


def test_alternatives_open_at_the_weakest_step_first_and_each_step_once() -> None:
    nodes = _chain([])  # the second step found nothing

    assert weak_steps(TASK, nodes, nodes["n1.1"])[0] == "n1.1"
    first = next_move(TASK, nodes, RunParams(), [])
    assert first is not None
    assert (first.kind, first.node_id) == ("branch", "n1.1")
    second = next_move(TASK, nodes, RunParams(), ["n1.1"])
    assert second is not None
    assert (second.kind, second.node_id) == ("branch", "n1")
    assert next_move(TASK, nodes, RunParams(), ["n1.1", "n1"]) is None


def test_no_alternatives_where_max_candidates_leaves_no_room() -> None:
    nodes = _chain([])

    assert next_move(TASK, nodes, RunParams(max_candidates=1), []) is None
