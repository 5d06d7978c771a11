"""The suite's account of a failed search: what became of the best answer's step."""

from __future__ import annotations

from agents.state import NodeRecord, new_node
from bench.quality import best_fate
from testkit.planted_structures import build_world

WORLD = build_world("wide", 1)


def _tree(best_status: str, best_prior: float) -> tuple[list[NodeRecord], str]:
    """The root, the best answer's parent, and its three children (the best one among them)."""
    best = WORLD.best(3)
    parent = WORLD.nodes[best.key.rsplit(".", 1)[0]]
    root = new_node(parent=None, index=1, step=WORLD.root.step, planned=[])
    mid = new_node(parent=root, index=1, step=parent.step, planned=[])
    kids: list[NodeRecord] = []
    others = iter([0.6, 0.8])  # the siblings' scores
    for index, truth in enumerate(WORLD.children(parent), start=1):
        kid = new_node(parent=mid, index=index, step=truth.step, planned=[])
        kid["prior"] = best_prior if truth.key == best.key else next(others)
        if truth.key == best.key:
            kid["status"] = best_status  # type: ignore[typeddict-item]
        kids.append(kid)
    return [root, mid, *kids], best.key


def test_a_best_step_never_run_is_pending_with_its_score_rank() -> None:
    nodes, key = _tree("pending", 0.65)

    assert best_fate(WORLD, nodes, key) == ("pending", 2)  # 0.8 ranks above it


def test_a_pruned_best_step_says_so_and_the_replanners_favourite_ranks_first() -> None:
    nodes, key = _tree("pruned", 0.95)

    assert best_fate(WORLD, nodes, key) == ("pruned", 1)


def test_a_best_step_the_search_never_proposed() -> None:
    nodes, key = _tree("pending", 0.5)

    assert best_fate(WORLD, nodes[:2], key) == ("unproposed", None)
