"""Vote schema and fallback choice; the dfs ordering."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.nodes.vote import best_valued, leaf_value, vote_schema
from agents.params import RunParams
from agents.state import NodeRecord
from agents.strategies import DepthFirst, strategy_for
from tests.support.trees import tree


def test_vote_schema_is_json_schema_with_a_lower_case_string_enum() -> None:
    schema = vote_schema(["n4", "n2"])

    assert schema["type"] == "object"
    assert schema["properties"]["choice"] == {
        "type": "string",
        "enum": ["n4", "n2"],
        "description": "A candidate id.",
    }
    assert schema["required"] == ["choice"]


def _tree() -> dict[str, NodeRecord]:
    return tree(("A", None), ("B", "A"), ("C", "A"), ("D", "B"))


def test_best_valued_prefers_the_leaf_with_the_higher_node_value() -> None:
    nodes = _tree()
    # B: judged 0.2 after a prior of 0.9 -> (0.9 + 0.2) / 2; C: judged 0.7, no prior.
    nodes["n1.1"] |= {"prior": 0.9, "score": 0.2, "value_sum": 0.2, "visits": 1}
    nodes["n1.2"] |= {"score": 0.7, "value_sum": 0.7, "visits": 1}

    assert leaf_value(nodes["n1.1"], 1.0) == pytest.approx(0.55)
    assert best_valued([nodes["n1.1"], nodes["n1.2"]], 1.0)["id"] == "n1.2"


def test_an_unjudged_leaf_has_no_value_to_show() -> None:
    assert leaf_value(_tree()["n1.1"], 1.0) is None


def test_best_valued_breaks_ties_by_id_order() -> None:
    nodes = _tree()

    assert best_valued([nodes["n1.2"], nodes["n1.1"]], 1.0)["id"] == "n1.1"


def test_dfs_takes_the_deepest_first_then_the_replanners_order() -> None:
    nodes = _tree()
    picks = DepthFirst().select(nodes, [nodes["n1.2"], nodes["n1.1.1"], nodes["n1.1"]], set(), 2)

    assert [n["id"] for n in picks] == ["n1.1.1", "n1.1"]


def test_dfs_never_returns_more_than_the_free_slots() -> None:
    nodes = _tree()

    assert DepthFirst().select(nodes, list(nodes.values()), set(), 0) == []


def test_an_unknown_strategy_is_refused_by_the_run_parameters() -> None:
    with pytest.raises(ValidationError, match="strategy"):
        RunParams(strategy="astar")  # type: ignore[arg-type]


def test_each_strategy_name_gives_its_policy() -> None:
    assert strategy_for(RunParams(strategy="dfs")).name == "dfs"
    assert strategy_for(RunParams(strategy="beam")).name == "beam"
    assert strategy_for(RunParams(strategy="mcts")).name == "mcts"
    assert strategy_for(RunParams()).name == "anytime"
