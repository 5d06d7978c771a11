"""Search strategies: the policy that picks which runnable nodes to start. One scheduler serves
them all (agents/nodes/search.py); a strategy only ranks.

- `mcts` (LATS): descend from the root by UCT over backed-up values to an open node.
- `beam`: per depth, only the best `beam_width` candidates run; runner-ups wait as a frontier
  and are taken up when the beam has nothing left to run (backtracking).
- `dfs`: the deepest runnable node first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from agents.errors import ConfigError
from agents.params import RunParams
from agents.state import NodeRecord
from agents.tree import by_id, children_of


class Strategy(Protocol):
    """Chooses which runnable nodes to start when `slots` job slots are free.

    `runnable` holds nodes whose parent is done and that no job runs; `in_flight` the node ids
    now being worked on (a policy may spread its picks away from them). Return at most
    `slots` nodes, best first.
    """

    name: str

    def select(
        self,
        nodes: Mapping[str, NodeRecord],
        runnable: Sequence[NodeRecord],
        in_flight: set[str],
        slots: int,
    ) -> list[NodeRecord]: ...


def _prior(node: NodeRecord) -> float:
    """The evaluator's score of a candidate; unscored candidates rank in the middle."""
    return node["prior"] if node["prior"] is not None else 0.5


class DepthFirst:
    """Deepest runnable node first; among siblings, the replanner's order. Older alternatives
    wait and are taken up when deeper work runs out (backtracking)."""

    name = "dfs"

    def select(
        self,
        nodes: Mapping[str, NodeRecord],
        runnable: Sequence[NodeRecord],
        in_flight: set[str],
        slots: int,
    ) -> list[NodeRecord]:
        ranked = sorted(runnable, key=lambda n: (-n["depth"], by_id(n)))
        return ranked[: max(0, slots)]


class Beam:
    """Layer by layer: at each depth only the `width` best-scored nodes run."""

    name = "beam"

    def __init__(self, width: int) -> None:
        self.width = width

    def in_beam(self, nodes: Mapping[str, NodeRecord]) -> set[str]:
        """Ids of the nodes inside the beam at their depth (pruned nodes never count)."""
        layers: dict[int, list[NodeRecord]] = {}
        for node in nodes.values():
            if node["status"] != "pruned":
                layers.setdefault(node["depth"], []).append(node)
        kept: set[str] = set()
        for layer in layers.values():
            ranked = sorted(layer, key=lambda n: (-_prior(n), by_id(n)))
            kept.update(n["id"] for n in ranked[: self.width])
        return kept

    def select(
        self,
        nodes: Mapping[str, NodeRecord],
        runnable: Sequence[NodeRecord],
        in_flight: set[str],
        slots: int,
    ) -> list[NodeRecord]:
        if slots <= 0:
            return []
        beam = self.in_beam(nodes)
        primary = [n for n in runnable if n["id"] in beam]
        if primary:
            return sorted(primary, key=lambda n: (n["depth"], -_prior(n), by_id(n)))[:slots]
        if in_flight:
            return []  # the beam is still working; runner-ups wait
        # The beam died: backtrack to the best runner-up, deepest first.
        frontier = sorted(runnable, key=lambda n: (-n["depth"], -_prior(n), by_id(n)))
        return frontier[:slots]


def uct(value_sum: float, visits: int, parent_visits: int, exploration: float) -> float:
    """Upper confidence bound of a child: mean value + c·sqrt(ln N_parent / N_child).

    `value_sum` and `visits` are kept apart, so the mean is taken exactly once. Unvisited
    children score +inf (each is tried before any is revisited).
    """
    if visits <= 0:
        return math.inf
    mean = value_sum / visits
    if parent_visits <= 1:
        return mean
    return mean + exploration * math.sqrt(math.log(parent_visits) / visits)


class Mcts:
    """LATS-style selection: from the root, follow the child with the best UCT among those
    whose subtree still has a runnable node, down to a runnable node.

    Parallel picks use virtual loss: every in-flight node, and every node picked in this
    round, adds one visit with no value along its path, so the next descent prefers others.
    """

    name = "mcts"

    def __init__(self, exploration: float) -> None:
        self.exploration = exploration

    def select(
        self,
        nodes: Mapping[str, NodeRecord],
        runnable: Sequence[NodeRecord],
        in_flight: set[str],
        slots: int,
    ) -> list[NodeRecord]:
        open_ids = {n["id"] for n in runnable}
        open_below: Counter[str] = Counter()  # open nodes in each node's subtree
        virtual: Counter[str] = Counter()
        for node_id in open_ids:
            for ancestor in _lineage(nodes, node_id):
                open_below[ancestor] += 1
        for node_id in in_flight:
            if node_id in nodes:
                for ancestor in _lineage(nodes, node_id):
                    virtual[ancestor] += 1
        roots = [n for n in nodes.values() if n["parent_id"] is None]
        picks: list[NodeRecord] = []
        while len(picks) < slots and roots and open_below[roots[0]["id"]] > 0:
            node = self._descend(nodes, roots[0], open_ids, open_below, virtual)
            picks.append(node)
            open_ids.discard(node["id"])
            for ancestor in _lineage(nodes, node["id"]):
                open_below[ancestor] -= 1
                virtual[ancestor] += 1
        return picks

    def _descend(
        self,
        nodes: Mapping[str, NodeRecord],
        current: NodeRecord,
        open_ids: set[str],
        open_below: Counter[str],
        virtual: Counter[str],
    ) -> NodeRecord:
        while current["id"] not in open_ids:
            parent_visits = current["visits"] + virtual[current["id"]]
            best: NodeRecord | None = None
            best_key: tuple[float, float] = (-math.inf, -math.inf)
            for child in children_of(nodes, current["id"]):
                if open_below[child["id"]] <= 0:
                    continue
                visits = child["visits"] + virtual[child["id"]]
                key = (
                    uct(child["value_sum"], visits, parent_visits, self.exploration),
                    _prior(child),  # among unvisited children, the evaluator's favourite
                )
                if key > best_key:  # strict: ties keep the replanner's order
                    best, best_key = child, key
            if best is None:
                raise RuntimeError(f"no open child under {current['id']}")
            current = best
        return current


def _lineage(nodes: Mapping[str, NodeRecord], node_id: str) -> list[str]:
    """`node_id` and its ancestors."""
    out = []
    current: str | None = node_id
    while current is not None:
        out.append(current)
        current = nodes[current]["parent_id"]
    return out


def strategy_for(params: RunParams) -> Strategy:
    """The strategy a run's parameters ask for."""
    if params.strategy == "mcts":
        return Mcts(params.exploration)
    if params.strategy == "beam":
        return Beam(params.beam_width)
    if params.strategy == "dfs":
        return DepthFirst()
    raise ConfigError(f"unknown strategy {params.strategy!r}")
