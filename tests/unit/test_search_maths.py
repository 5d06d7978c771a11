"""Selection maths: PUCT, the one node value, backed-up values, unobserved visits (WU-UCT) and
virtual loss, beam ordering."""

from __future__ import annotations

import math

import pytest

from agents.params import InFlightRule, RunParams
from agents.state import NodeRecord, new_node
from agents.strategies import Beam, Mcts, prior_shares, puct, strategy_for, wu_puct
from agents.tree import (
    NEUTRAL_VALUE,
    backpropagate,
    blended_value,
    node_value,
    node_values,
    own_value,
)


def _tree(*ids: str) -> dict[str, NodeRecord]:
    """Fresh nodes by id (`n1.2`: the second child of `n1`), parents first, each its id as its
    step. The comments call the root's children B, C and D, and theirs B1, B2, C1."""
    nodes: dict[str, NodeRecord] = {}
    for node_id in ids:
        parent_id, _, number = node_id.rpartition(".")
        parent = nodes[parent_id] if parent_id else None
        index = int(number) if parent else 1
        nodes[node_id] = new_node(parent=parent, index=index, step=node_id, planned=[])
    return nodes


def test_puct_is_the_value_plus_the_prior_weighted_exploration_term() -> None:
    assert puct(0.6, 0.5, 4, 1, 1.0) == 0.6 + 1.0 * 0.5 * math.sqrt(4) / (1 + 1)
    assert puct(0.6, 0.5, 4, 1, 0.0) == 0.6


def test_an_unvisited_child_competes_through_its_prior_not_an_infinite_bonus() -> None:
    fresh = puct(0.1, 0.1, 9, 0, 1.0)  # a weak unvisited candidate

    assert math.isfinite(fresh)
    assert fresh < puct(0.8, 0.6, 9, 3, 1.0)  # loses to a visited child that did well


def test_the_exploration_bonus_shrinks_as_a_child_is_visited() -> None:
    bonuses = [puct(0.0, 0.5, 16, n, 1.0) for n in range(4)]

    assert bonuses == sorted(bonuses, reverse=True)
    assert bonuses[0] == 0.5 * 4


def test_prior_shares_sum_to_one_and_count_unscored_children_as_neutral() -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.3")
    nodes["n1.1"]["prior"], nodes["n1.2"]["prior"] = 0.9, 0.1

    shares = prior_shares([nodes["n1.1"], nodes["n1.2"], nodes["n1.3"]])

    assert shares == pytest.approx({"n1.1": 0.6, "n1.2": 0.1 / 1.5, "n1.3": 0.5 / 1.5})
    assert sum(shares.values()) == pytest.approx(1.0)


def test_all_zero_priors_share_equally() -> None:
    nodes = _tree("n1", "n1.1", "n1.2")
    nodes["n1.1"]["prior"] = nodes["n1.2"]["prior"] = 0.0

    assert prior_shares([nodes["n1.1"], nodes["n1.2"]]) == {"n1.1": 0.5, "n1.2": 0.5}


def test_the_node_value_blends_the_prior_as_pseudo_visits_with_the_backed_up_mean() -> None:
    assert blended_value(0.0, 0, 0.8) == 0.8  # unvisited: its prior
    assert blended_value(0.0, 0, None) == NEUTRAL_VALUE  # nothing known
    assert blended_value(1.2, 3, None) == pytest.approx(0.4)  # no prior: the mean
    assert blended_value(1.2, 3, 0.8) == pytest.approx((0.8 + 1.2) / 4)  # w = 1
    assert blended_value(1.2, 3, 0.8, prior_weight=2.0) == pytest.approx((1.6 + 1.2) / 5)
    assert blended_value(1.2, 3, 0.8, prior_weight=0.0) == pytest.approx(0.4)


def test_a_nodes_own_value_blends_its_prior_with_its_progress_score() -> None:
    nodes = _tree("n1")
    assert own_value(nodes["n1"]) == NEUTRAL_VALUE
    nodes["n1"]["prior"] = 0.8
    assert own_value(nodes["n1"]) == 0.8
    nodes["n1"]["score"] = 0.4
    assert own_value(nodes["n1"]) == pytest.approx(0.6)
    assert own_value(nodes["n1"], prior_weight=3.0) == pytest.approx((2.4 + 0.4) / 4)


def test_a_node_with_live_children_is_worth_its_best_child() -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.1.1", "n1.1.2")
    nodes["n1"] |= {"score": 0.9}
    nodes["n1.1"] |= {"prior": 0.3, "score": 0.3}  # looked poor, but leads to B1
    nodes["n1.1.1"]["prior"] = 0.95
    nodes["n1.1.2"] |= {"prior": 0.99, "status": "pruned"}  # dead: never counts
    nodes["n1.2"] |= {"prior": 0.7, "status": "failed"}

    assert node_value(nodes, "n1.1") == 0.95
    assert node_value(nodes, "n1") == 0.95  # C failed: only B's subtree is alive
    assert node_values(nodes) == {k: node_value(nodes, k) for k in nodes}


def test_a_node_whose_children_all_died_is_worth_its_own_judgements() -> None:
    nodes = _tree("n1", "n1.1")
    nodes["n1"]["score"] = 0.4
    nodes["n1.1"] |= {"prior": 0.9, "status": "pruned"}

    assert node_value(nodes, "n1") == 0.4


def test_backpropagation_keeps_sum_and_visits_apart() -> None:
    nodes = _tree("n1", "n1.1", "n1.1.1")
    for record in backpropagate(nodes, "n1.1.1", 1.0):
        nodes[record["id"]] = record
    for record in backpropagate(nodes, "n1.1", 0.0):
        nodes[record["id"]] = record

    assert (nodes["n1"]["value_sum"], nodes["n1"]["visits"]) == (1.0, 2)
    assert (nodes["n1.1.1"]["value_sum"], nodes["n1.1.1"]["visits"]) == (1.0, 1)
    assert (nodes["n1.1"]["value_sum"], nodes["n1.1"]["visits"]) == (1.0, 2)


def _done(nodes: dict[str, NodeRecord], node_id: str, value_sum: float, visits: int) -> None:
    nodes[node_id] |= {"status": "done", "expanded": True, "value_sum": value_sum, "visits": visits}


def test_mcts_expands_the_unvisited_child_with_the_best_prior_first() -> None:
    nodes = _tree("n1", "n1.1", "n1.2")
    _done(nodes, "n1", 0.5, 1)
    nodes["n1.1"]["prior"], nodes["n1.2"]["prior"] = 0.3, 0.8

    picks = Mcts(1.0).select(nodes, [nodes["n1.1"], nodes["n1.2"]], set(), 1)

    assert [p["id"] for p in picks] == ["n1.2"]


@pytest.mark.parametrize(("below", "expected"), [(0.2, "n1.2"), (0.9, "n1.1.1")])
def test_mcts_leaves_a_favourite_whose_subtree_disappoints_for_an_untried_sibling(
    below: float, expected: str
) -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.1.1")
    _done(nodes, "n1", 1.0, 2)
    _done(nodes, "n1.1", 0.5, 1)
    nodes["n1.1"] |= {"prior": 0.9, "score": 0.5}
    nodes["n1.2"]["prior"] = 0.6
    nodes["n1.1.1"]["prior"] = below  # the best B's expansion promises

    picks = Mcts(1.0).select(nodes, [nodes["n1.1.1"], nodes["n1.2"]], set(), 1)

    assert [p["id"] for p in picks] == [expected]


def test_mcts_descends_by_value_to_the_open_node() -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.1.1", "n1.2.1")
    _done(nodes, "n1", 1.1, 3)
    _done(nodes, "n1.1", 0.2, 1)
    _done(nodes, "n1.2", 0.9, 1)
    nodes["n1.1.1"]["prior"], nodes["n1.2.1"]["prior"] = 0.9, 0.2  # B leads somewhere better

    picks = Mcts(0.0).select(nodes, [nodes["n1.1.1"], nodes["n1.2.1"]], set(), 1)

    assert [p["id"] for p in picks] == ["n1.1.1"]


def test_pruned_siblings_take_no_share_of_the_priors() -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.3")
    _done(nodes, "n1", 0.5, 1)
    nodes["n1.1"] |= {"prior": 0.05, "status": "pruned"}
    nodes["n1.2"]["prior"], nodes["n1.3"]["prior"] = 0.5, 0.5
    mcts = Mcts(1.0)

    # C and D share the priors half and half: the pruned B takes nothing from them.
    assert mcts.score(nodes["n1.2"], 0.5, 0.5, 1, 0, 0) == 0.5 + 0.5
    assert [p["id"] for p in mcts.select(nodes, [nodes["n1.2"], nodes["n1.3"]], set(), 1)] == [
        "n1.2"
    ]


@pytest.mark.parametrize(
    ("q", "share", "parent", "visits", "c"),
    [(0.6, 0.5, 4, 1, 1.0), (0.1, 0.1, 9, 0, 1.0), (0.8, 0.6, 9, 3, 2.5), (0.3, 1.0, 0, 0, 0.7)],
)
def test_with_nothing_in_flight_the_rule_is_puct_exactly(
    q: float, share: float, parent: int, visits: int, c: float
) -> None:
    nodes = _tree("n1", "n1.1")
    nodes["n1.1"]["visits"] = visits

    assert wu_puct(q, share, parent, visits, 0, 0, c) == puct(q, share, parent, visits, c)
    for rule in ("unobserved", "virtual_loss"):
        mcts = Mcts(c, in_flight=rule)
        assert mcts.score(nodes["n1.1"], q, share, parent, 0, 0) == puct(
            q, share, parent, visits, c
        )


def test_unobserved_visits_count_in_the_exploration_term_by_hand() -> None:
    # Q + c·P·sqrt(N + O) / (1 + n + o), N = 4, O = 2, n = 1, o = 1.
    assert wu_puct(0.6, 0.5, 4, 1, 2, 1, 1.0) == pytest.approx(0.6 + 0.5 * math.sqrt(6) / 3)
    # Work in flight under a sibling raises only the parent's count: this child's bonus grows.
    assert wu_puct(0.6, 0.5, 4, 1, 2, 0, 1.0) == pytest.approx(0.6 + 0.5 * math.sqrt(6) / 2)
    # No exploration: the value alone, whatever is in flight.
    assert wu_puct(0.6, 0.5, 4, 1, 5, 3, 0.0) == 0.6


def test_in_flight_work_lowers_a_branchs_bonus_but_not_its_value() -> None:
    nodes = _tree("n1", "n1.1")
    nodes["n1.1"] |= {"prior": 0.8, "visits": 1}
    exploring, greedy = Mcts(1.0, in_flight="unobserved"), Mcts(0.0, in_flight="unobserved")

    idle = exploring.score(nodes["n1.1"], 0.8, 1.0, 2, 0, 0)
    busy = exploring.score(nodes["n1.1"], 0.8, 1.0, 2, 1, 1)

    assert busy < idle
    assert idle == pytest.approx(0.8 + math.sqrt(2) / 2)
    assert busy == pytest.approx(0.8 + math.sqrt(3) / 3)
    # Q is what exploration leaves: untouched by the work in flight.
    assert greedy.score(nodes["n1.1"], 0.8, 1.0, 2, 3, 3) == 0.8


def test_under_virtual_loss_an_in_flight_visit_counts_as_a_loss_against_the_value() -> None:
    nodes = _tree("n1", "n1.1")
    nodes["n1.1"] |= {"prior": 0.8, "visits": 1}
    mcts = Mcts(0.0, in_flight="virtual_loss")  # no exploration: the value alone

    # 0.8 stands for prior_weight + visits = 2 observations; one loss makes it 0.8 * 2 / 3.
    assert mcts.score(nodes["n1.1"], 0.8, 1.0, 2, 1, 1) == pytest.approx(0.8 * 2 / 3)


def _two_branches(b_value: float, c_value: float) -> dict[str, NodeRecord]:
    """A root run twice, its children B (two open children) and C (one), both run once and
    unscored (shares 1/2); B's best open child promises `b_value`, C's `c_value`."""
    nodes = _tree("n1", "n1.1", "n1.2", "n1.1.1", "n1.1.2", "n1.2.1")
    _done(nodes, "n1", 1.2, 2)
    _done(nodes, "n1.1", 0.7, 1)
    _done(nodes, "n1.2", 0.5, 1)
    for node_id, prior in (("n1.1.1", b_value), ("n1.1.2", 0.6), ("n1.2.1", c_value)):
        nodes[node_id]["prior"] = prior
    return nodes


def _picks(nodes: dict[str, NodeRecord], mcts: Mcts, slots: int, busy: set[str]) -> list[str]:
    runnable = [nodes[k] for k in ("n1.1.1", "n1.1.2", "n1.2.1") if k not in busy]
    return [p["id"] for p in mcts.select(nodes, runnable, busy, slots)]


@pytest.mark.parametrize(
    ("b_value", "c_value", "rule"),
    [
        # First pick: B 0.6 + 0.5·√2/2 = 0.954 against C 0.55 + 0.354 = 0.904. Second: B1 in
        # flight, B 0.6 + 0.5·√3/3 = 0.889 against C 0.55 + 0.5·√3/2 = 0.983.
        pytest.param(0.6, 0.55, "unobserved", id="unobserved_visits_over_close_siblings"),
        # Virtual loss spreads them the same way here.
        pytest.param(0.6, 0.55, "virtual_loss", id="virtual_loss_over_close_siblings"),
        # Without virtual loss both picks would go under B (its value is higher).
        pytest.param(0.7, 0.5, "virtual_loss", id="virtual_loss_across_branches"),
    ],
)
def test_parallel_picks_spread_over_the_branches(
    b_value: float, c_value: float, rule: InFlightRule
) -> None:
    nodes = _two_branches(b_value, c_value)
    mcts = Mcts(1.0, in_flight=rule)

    assert _picks(nodes, mcts, 1, set()) == ["n1.1.1"]
    assert _picks(nodes, mcts, 2, set()) == ["n1.1.1", "n1.2.1"]
    assert _picks(nodes, mcts, 1, {"n1.1.1"}) == ["n1.2.1"]


def test_unobserved_visits_keep_a_clearly_better_branch_until_its_bonus_is_spent() -> None:
    nodes = _two_branches(0.7, 0.5)
    mcts = Mcts(1.0, in_flight="unobserved")

    # Second pick: B 0.7 + 0.5·√3/3 = 0.989 still beats C 0.5 + 0.5·√3/2 = 0.933 (virtual
    # loss would have made B 0.7·2/3 + 0.289 = 0.756 and gone to C).
    assert _picks(nodes, mcts, 2, set()) == ["n1.1.1", "n1.1.2"]
    # Third: B 0.7 + 0.5·2/4 = 0.95 against C 0.5 + 0.5·2/2 = 1.0.
    assert _picks(nodes, mcts, 3, set()) == ["n1.1.1", "n1.1.2", "n1.2.1"]
    assert _picks(nodes, mcts, 1, {"n1.1.1", "n1.1.2"}) == ["n1.2.1"]


def test_picking_in_parallel_leaves_the_value_sums_and_visits_alone() -> None:
    nodes = _two_branches(0.7, 0.5)
    before = {k: (n["value_sum"], n["visits"]) for k, n in nodes.items()}

    _picks(nodes, Mcts(1.0, in_flight="unobserved"), 3, set())

    assert {k: (n["value_sum"], n["visits"]) for k, n in nodes.items()} == before


def test_mcts_never_picks_more_than_there_is_to_run() -> None:
    nodes = _tree("n1")

    assert [p["id"] for p in Mcts(1.0).select(nodes, [nodes["n1"]], set(), 4)] == ["n1"]


def test_beam_keeps_the_best_per_layer_and_backtracks_only_when_idle() -> None:
    nodes = _tree("n1", "n1.1", "n1.2", "n1.3")
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
    nodes = _tree("n1", "n1.1", "n1.2")
    nodes["n1.1"] |= {"prior": 0.9, "status": "pruned"}
    nodes["n1.2"]["prior"] = 0.1

    assert "n1.2" in Beam(1).in_beam(nodes)


def test_the_run_parameters_choose_the_rule_for_work_in_flight() -> None:
    default = strategy_for(RunParams(strategy="mcts"))
    chosen = strategy_for(RunParams(strategy="mcts", in_flight_rule="unobserved"))

    assert isinstance(default, Mcts)
    assert isinstance(chosen, Mcts)
    assert (default.in_flight, chosen.in_flight) == ("virtual_loss", "unobserved")
