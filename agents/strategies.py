"""Search strategies: the policy that orders runnable nodes. One scheduler serves them all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from agents.errors import ConfigError
from agents.state import NodeRecord
from agents.tree import by_id


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


_STRATEGIES: dict[str, type[DepthFirst]] = {"dfs": DepthFirst}


def strategy_for(name: str) -> Strategy:
    """The strategy registered under `name`."""
    try:
        return _STRATEGIES[name]()
    except KeyError as e:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(_STRATEGIES)}") from e
