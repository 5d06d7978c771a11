"""Selection maths: UCT, backed-up values, virtual loss, beam ordering."""

from __future__ import annotations

import math

from agents.state import NodeRecord, new_node
from agents.strategies import Beam, Mcts, uct
from agents.tree import backpropagate, mean_value


def _tree(*edges: tuple[str, str, str]) -> dict[str, NodeRecord]:
    """(id, parent id or '', step) triples, parents first."""
    nodes: dict[str, NodeRecord] = {}
    for node_id, parent_id, step in edges:
        parent = nodes[parent_id] if parent_id else None
        index = int(node_id.rsplit(".", 1)[-1]) if parent else 1
        nodes[node_id] = new_node(parent=parent, index=index, step=step, planned=[])
    return nodes


def test_uct_is_mean_value_plus_the_exploration_term() -> None:
    assert uct(3.0, 4, 10, 1.0) == 0.75 + math.sqrt(math.log(10) / 4)
    assert uct(3.0, 4, 10, 0.0) == 0.75


def test_uct_tries_unvisited_children_first() -> None:
    assert uct(0.0, 0, 5, 1.0) == math.inf


def test_uct_with_a_single_parent_visit_is_the_mean() -> None:
    assert uct(0.6, 1, 1, 2.0) == 0.6


def test_backpropagation_keeps_sum_and_visits_apart() -> None:
    nodes = _tree(("n1", "", "A"), ("n1.1", "n1", "B"), ("n1.1.1", "n1.1", "C"))
    for record in backpropagate(nodes, "n1.1.1", 1.0):
        nodes[record["id"]] = record
    for record in backpropagate(nodes, "n1.1", 0.0):
        nodes[record["id"]] = record

    assert (nodes["n1"]["value_sum"], nodes["n1"]["visits"]) == (1.0, 2)
    assert (nodes["n1.1.1"]["value_sum"], nodes["n1.1.1"]["visits"]) == (1.0, 1)
    assert mean_value(nodes["n1.1"]) == 0.5
    # The reference bug divides a stored mean by the visits again: 0.25 instead of 0.5.
    assert uct(nodes["n1.1"]["value_sum"], nodes["n1.1"]["visits"], 2, 0.0) == 0.5


def _done(nodes: dict[str, NodeRecord], node_id: str, value_sum: float, visits: int) -> None:
    nodes[node_id] |= {"status": "done", "expanded": True, "value_sum": value_sum, "visits": visits}


def test_mcts_expands_the_unvisited_child_with_the_best_prior_first() -> None:
    nodes = _tree(("n1", "", "A"), ("n1.1", "n1", "B"), ("n1.2", "n1", "C"))
    _done(nodes, "n1", 0.5, 1)
    nodes["n1.1"]["prior"], nodes["n1.2"]["prior"] = 0.3, 0.8

    picks = Mcts(1.0).select(nodes, [nodes["n1.1"], nodes["n1.2"]], set(), 1)

    assert [p["id"] for p in picks] == ["n1.2"]


def test_mcts_descends_by_uct_to_the_open_node() -> None:
    nodes = _tree(
        ("n1", "", "A"),
        ("n1.1", "n1", "B"),
        ("n1.2", "n1", "C"),
        ("n1.1.1", "n1.1", "B1"),
        ("n1.2.1", "n1.2", "C1"),
    )
    _done(nodes, "n1", 1.1, 3)
    _done(nodes, "n1.1", 0.9, 1)  # better mean
    _done(nodes, "n1.2", 0.2, 1)

    picks = Mcts(0.0).select(nodes, [nodes["n1.1.1"], nodes["n1.2.1"]], set(), 1)

    assert [p["id"] for p in picks] == ["n1.1.1"]


def test_virtual_loss_spreads_parallel_picks_across_branches() -> None:
    nodes = _tree(
        ("n1", "", "A"),
        ("n1.1", "n1", "B"),
        ("n1.2", "n1", "C"),
        ("n1.1.1", "n1.1", "B1"),
        ("n1.1.2", "n1.1", "B2"),
        ("n1.2.1", "n1.2", "C1"),
    )
    _done(nodes, "n1", 1.2, 2)
    _done(nodes, "n1.1", 0.7, 1)
    _done(nodes, "n1.2", 0.5, 1)
    runnable = [nodes["n1.1.1"], nodes["n1.1.2"], nodes["n1.2.1"]]

    alone = Mcts(1.0).select(nodes, runnable, set(), 1)
    pair = Mcts(1.0).select(nodes, runnable, set(), 2)
    busy = Mcts(1.0).select(nodes, [nodes["n1.1.2"], nodes["n1.2.1"]], {"n1.1.1"}, 1)

    assert [p["id"] for p in alone] == ["n1.1.1"]
    # Without virtual loss both picks would go under B (its mean is higher).
    assert [p["id"] for p in pair] == ["n1.1.1", "n1.2.1"]
    assert [p["id"] for p in busy] == ["n1.2.1"]


def test_mcts_never_picks_more_than_there_is_to_run() -> None:
    nodes = _tree(("n1", "", "A"))

    assert [p["id"] for p in Mcts(1.0).select(nodes, [nodes["n1"]], set(), 4)] == ["n1"]


def test_beam_keeps_the_best_per_layer_and_backtracks_only_when_idle() -> None:
    nodes = _tree(("n1", "", "A"), ("n1.1", "n1", "B"), ("n1.2", "n1", "C"), ("n1.3", "n1", "D"))
    _done(nodes, "n1", 0.5, 1)
    for node_id, prior in (("n1.1", 0.4), ("n1.2", 0.9), ("n1.3", 0.7)):
        nodes[node_id]["prior"] = prior
    layer = [nodes["n1.1"], nodes["n1.2"], nodes["n1.3"]]
    beam = Beam(2)

    assert beam.in_beam(nodes) == {"n1", "n1.2", "n1.3"}
    assert [p["id"] for p in beam.select(nodes, layer, set(), 3)] == ["n1.2", "n1.3"]
    # The beam's nodes are busy: the runner-up waits.
    assert beam.select(nodes, [nodes["n1.1"]], {"n1.2"}, 1) == []
    # The beam died (its nodes ran and nothing of theirs is left): backtrack.
    assert [p["id"] for p in beam.select(nodes, [nodes["n1.1"]], set(), 1)] == ["n1.1"]


def test_pruned_nodes_never_take_a_beam_place() -> None:
    nodes = _tree(("n1", "", "A"), ("n1.1", "n1", "B"), ("n1.2", "n1", "C"))
    nodes["n1.1"] |= {"prior": 0.9, "status": "pruned"}
    nodes["n1.2"]["prior"] = 0.1

    assert "n1.2" in Beam(1).in_beam(nodes)
