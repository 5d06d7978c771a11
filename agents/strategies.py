"""Search strategies: the policy that picks which runnable nodes to start. One scheduler serves
them all (agents/nodes/search.py); a strategy only ranks.

- `mcts` (LATS with PUCT): descend from the root to an open node, at each level taking the
  child with the best Q + c·P·sqrt(N + O)/(1 + n + o), where Q is the child's `node_value`, P
  its share of the siblings' candidate scores (priors), N and n the parent's and the child's
  visits, O and o the simulations in flight through them (WU-UCT's unobserved visits); under
  virtual loss (the default) the in-flight ones also count as visits of value 0 in Q.
- `beam`: per depth, only the best `beam_width` candidates run; runner-ups wait as a frontier
  and are taken up when the beam has nothing left to run (backtracking).
- `dfs`: the deepest runnable node first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agents.anytime import order_runnable
from agents.params import InFlightRule, RunParams
from agents.state import NodeRecord
from agents.tree import NEUTRAL_VALUE, PRIOR_WEIGHT, by_id, children_of, node_values
from calls.errors import ConfigError

Tree = Mapping[str, NodeRecord]  # the run's nodes by id
Runnable = Sequence[NodeRecord]  # nodes a job may start on
Picks = list[NodeRecord]  # the nodes to start, best first


class Strategy(Protocol):
    """Chooses which runnable nodes to start when `slots` job slots are free.

    `runnable` holds nodes whose parent is done and that no job runs; `in_flight` the node ids
    now being worked on (a policy may spread its picks away from them). Return at most
    `slots` nodes, best first.
    """

    name: str

    def select(self, nodes: Tree, runnable: Runnable, in_flight: set[str], slots: int) -> Picks: ...


def _prior(node: NodeRecord) -> float:
    """The replanner's score of a candidate; unscored candidates rank in the middle."""
    return node["prior"] if node["prior"] is not None else NEUTRAL_VALUE


class DepthFirst:
    """Deepest runnable node first; among siblings, the replanner's order. Older alternatives
    wait and are taken up when deeper work runs out (backtracking)."""

    name = "dfs"

    def select(self, nodes: Tree, runnable: Runnable, in_flight: set[str], slots: int) -> Picks:
        ranked = sorted(runnable, key=lambda n: (-n["depth"], by_id(n)))
        return ranked[: max(0, slots)]


@dataclass(frozen=True, slots=True)
class Beam:
    """Layer by layer: at each depth only the `width` best-scored nodes run."""

    width: int
    name = "beam"

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

    def select(self, nodes: Tree, runnable: Runnable, in_flight: set[str], slots: int) -> Picks:
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


def puct(q: float, prior_share: float, parent_visits: int, visits: int, c: float) -> float:
    """PUCT (AlphaZero): Q(s,a) + c·P(s,a)·sqrt(N(s)) / (1 + N(s,a)).

    `q` is the child's value, `prior_share` P its share of the siblings' priors (they sum to
    1), `parent_visits` N(s), `visits` N(s,a). An unvisited child competes through its prior
    instead of an infinite bonus; the bonus shrinks as the child is visited.
    """
    return q + c * prior_share * math.sqrt(max(0, parent_visits)) / (1 + max(0, visits))


def wu_puct(
    q: float,
    prior_share: float,
    parent_visits: int,
    visits: int,
    parent_unobserved: int,
    unobserved: int,
    c: float,
) -> float:
    """PUCT with WU-UCT's unobserved visits (Liu et al., ICLR 2020):
    Q(s,a) + c·P(s,a)·sqrt(N(s) + O(s)) / (1 + N(s,a) + O(s,a)).

    O counts the simulations started through a node and not yet observed (in flight). They
    shrink the node's exploration bonus as visits would, but leave Q alone: a branch that is
    being explored looks less worth exploring, not worse. With O = 0 it is `puct`.
    """
    return puct(q, prior_share, parent_visits + parent_unobserved, visits + unobserved, c)


def prior_shares(children: Sequence[NodeRecord]) -> dict[str, float]:
    """P(s,a): each child's prior over the sum of its siblings' (pruned ones excluded by the
    caller). Unscored children count as `NEUTRAL_VALUE`; all zero gives equal shares."""
    raw = {c["id"]: _prior(c) for c in children}
    total = sum(raw.values())
    if total <= 0:
        return {key: 1 / len(raw) for key in raw} if raw else {}
    return {key: value / total for key, value in raw.items()}


@dataclass(frozen=True, slots=True)
class Mcts:
    """LATS-style selection with priors: from the root, follow the child with the best PUCT
    among those whose subtree still has a runnable node, down to a runnable node.

    Q is `node_value`: a child not yet run is worth its prior, one that ran its prior blended
    with its progress score, one that was expanded its best child. So a branch whose
    continuations disappoint falls below its untried siblings, and a weak-looking step that
    opens good continuations is followed.

    Parallel picks count the work in flight: every in-flight node, and every node picked in
    this round, adds one to O along its path. O enters the exploration term as visits
    (`wu_puct`); under `in_flight="virtual_loss"` (the default) each is also a visit of value
    0 in Q (against the `prior_weight + visits` observations a value stands for), so the next
    descent leaves a busy branch sooner. `in_flight="unobserved"` is WU-UCT's rule: Q is left
    to observations, and a busy branch only loses exploration bonus. On the planted-value
    suite virtual loss keeps more quality at 4 slots, WU-UCT from 8 up (docs/architecture.md).
    """

    exploration: float
    prior_weight: float = PRIOR_WEIGHT
    in_flight: InFlightRule = "virtual_loss"
    name = "mcts"

    def select(self, nodes: Tree, runnable: Runnable, in_flight: set[str], slots: int) -> Picks:
        open_ids = {n["id"] for n in runnable}
        open_below: Counter[str] = Counter()  # open nodes in each node's subtree
        unobserved: Counter[str] = Counter()  # O: simulations in flight through each node
        for node_id in open_ids:
            for ancestor in _lineage(nodes, node_id):
                open_below[ancestor] += 1
        for node_id in in_flight:
            if node_id in nodes:
                for ancestor in _lineage(nodes, node_id):
                    unobserved[ancestor] += 1
        roots = [n for n in nodes.values() if n["parent_id"] is None]
        values = node_values(nodes, self.prior_weight)
        picks: list[NodeRecord] = []
        while len(picks) < slots and roots and open_below[roots[0]["id"]] > 0:
            node = self._descend(nodes, values, roots[0], open_ids, open_below, unobserved)
            picks.append(node)
            open_ids.discard(node["id"])
            for ancestor in _lineage(nodes, node["id"]):
                open_below[ancestor] -= 1
                unobserved[ancestor] += 1
        return picks

    def score(
        self,
        child: NodeRecord,
        value: float,
        share: float,
        parent_visits: int,
        parent_unobserved: int,
        unobserved: int,
    ) -> float:
        """The child's key: `wu_puct` of its value, share and counts. Under `virtual_loss` its
        `unobserved` visits also count as losses (value 0) against the `prior_weight + visits`
        observations its value stands for."""
        q = value
        if self.in_flight == "virtual_loss":
            seen = self.prior_weight + child["visits"]
            q = value * seen / (seen + unobserved) if seen + unobserved > 0 else value
        return wu_puct(
            q,
            share,
            parent_visits,
            child["visits"],
            parent_unobserved,
            unobserved,
            self.exploration,
        )

    def _descend(
        self,
        nodes: Mapping[str, NodeRecord],
        values: Mapping[str, float],
        current: NodeRecord,
        open_ids: set[str],
        open_below: Counter[str],
        unobserved: Counter[str],
    ) -> NodeRecord:
        while current["id"] not in open_ids:
            children = [c for c in children_of(nodes, current["id"]) if c["status"] != "pruned"]
            shares = prior_shares(children)
            best: NodeRecord | None = None
            best_key = -math.inf
            for child in children:
                if open_below[child["id"]] <= 0:
                    continue
                key = self.score(
                    child,
                    values[child["id"]],
                    shares[child["id"]],
                    current["visits"],
                    unobserved[current["id"]],
                    unobserved[child["id"]],
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


class AnytimeOrder:
    """The anytime search's order (agents/anytime.py): deepest runnable node first, then by
    id, so a path is carried to its answer before another is opened. Where the search
    branches is not this ranking's business: the scheduler opens alternatives only at weak
    steps of the first answer's path."""

    name = "anytime"

    def select(self, nodes: Tree, runnable: Runnable, in_flight: set[str], slots: int) -> Picks:
        return order_runnable(runnable)[: max(0, slots)]


def strategy_for(params: RunParams) -> Strategy:
    """The strategy a run's parameters ask for."""
    if params.strategy == "anytime":
        return AnytimeOrder()
    if params.strategy == "mcts":
        return Mcts(params.exploration, params.prior_weight, params.in_flight_rule)
    if params.strategy == "beam":
        return Beam(params.beam_width)
    if params.strategy == "dfs":
        return DepthFirst()
    raise ConfigError(f"unknown strategy {params.strategy!r}")
