"""The steering rules on a tree of node records (pure): what prune, boost and add_step change,
and what they refuse."""

from __future__ import annotations

from agents.params import RunParams
from agents.state import NodeRecord, new_node
from agents.steering import BOOSTED_PRIOR, SteerCommand, steer

PARAMS = RunParams(max_depth=3)


def _tree() -> dict[str, NodeRecord]:
    """n1 (done) -> n1.1 (done, answered), n1.2 (done) -> n1.2.1 (pending); n1.3 (running)."""
    root = {**new_node(parent=None, index=1, step="A", planned=["P"]), "status": "done"}
    answered = {
        **new_node(parent=root, index=1, step="B", planned=[]),
        "status": "done",
        "complete": True,
        "answer": "b",
    }
    middle = {**new_node(parent=root, index=2, step="C", planned=[]), "status": "done"}
    below = new_node(parent=middle, index=1, step="C2", planned=[])
    running = {**new_node(parent=root, index=3, step="E", planned=[]), "status": "running"}
    return {n["id"]: n for n in (root, answered, middle, below, running)}  # type: ignore[misc]


def _cmd(command: str, node_id: str, step: str | None = None) -> SteerCommand:
    return SteerCommand(id=1, command=command, node_id=node_id, step=step)  # type: ignore[arg-type]


def test_prune_takes_the_subtree_but_leaves_written_answers() -> None:
    out = steer(_tree(), _cmd("prune", "n1"), PARAMS)

    assert out.refused is None
    assert sorted(out.updates) == ["n1", "n1.2", "n1.2.1", "n1.3"]
    assert {n["status"] for n in out.updates.values()} == {"pruned"}
    assert out.stop == {"n1", "n1.2", "n1.2.1", "n1.3"}  # n1.3's job is cancelled


def test_boost_raises_a_pending_nodes_prior_and_refuses_one_that_ran() -> None:
    boosted = steer(_tree(), _cmd("boost", "n1.2.1"), PARAMS)
    refused = steer(_tree(), _cmd("boost", "n1.2"), PARAMS)

    assert boosted.updates["n1.2.1"]["prior"] == BOOSTED_PRIOR
    assert refused.refused == "node n1.2 has run already (done)"
    assert refused.updates == {}


def test_an_added_step_is_the_next_child_of_a_done_node_and_reopens_its_path() -> None:
    out = steer(_tree(), _cmd("add_step", "n1.1", "  Check it  "), PARAMS)

    child = out.updates["n1.1.1"]
    assert out.created == "n1.1.1"
    assert (child["step"], child["status"], child["prior"]) == ("Check it", "pending", 1.0)
    assert out.updates["n1.1"]["complete"] is False
    assert out.updates["n1.1"]["answer"] == "b"
    assert steer(_tree(), _cmd("add_step", "n1", "D"), PARAMS).created == "n1.4"


def test_an_added_step_is_refused_under_a_node_not_done_or_at_max_depth() -> None:
    tree = _tree()

    assert steer(tree, _cmd("add_step", "n1.3", "D"), PARAMS).refused == (
        "node n1.3 is not done (running)"
    )
    tree["n1.2.1"] = {**tree["n1.2.1"], "status": "done"}
    assert "max_depth" in (steer(tree, _cmd("add_step", "n1.2.1", "D"), PARAMS).refused or "")
    assert steer(tree, _cmd("prune", "n7"), PARAMS).refused == "no node n7"
