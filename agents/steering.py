"""Live steering: commands a caller sends a running search (prune a subtree, boost a node,
add a step under a done node), taken from a `CommandSource` at each scheduling round and
applied to the tree as plain data. `steer` is pure: the tree and a command in, node updates
and the outcome out; the scheduler applies them (agents/nodes/search.py).

Rules:
- `prune`: the node and every node under it that has no answer yet become `pruned` (their
  jobs in flight are cancelled); answers already written stay candidates;
- `boost`: a node that has not run yet gets the highest prior (1), so the search prefers it;
- `add_step`: a new pending child, with the highest prior, under a done node that is not
  pruned, its step text as given, the parent's remaining plan after it; refused at
  `max_depth` or `max_nodes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.params import RunParams
from agents.state import NodeRecord, id_key, new_node
from agents.tree import children_of, clean_step

BOOSTED_PRIOR = 1.0
MAX_STEP_CHARS = 500

CommandKind = Literal["prune", "boost", "add_step"]


class SteerCommand(BaseModel):
    """One command as the search takes it: its id (increasing per run), what it asks, and the
    name of the key that sent it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=1)
    command: CommandKind
    node_id: str = Field(description="The node pruned or boosted; the parent of an added step.")
    step: str | None = Field(default=None, description="The added step's text (add_step).")
    by: str | None = None


class CommandSource(Protocol):
    """Where a run's commands wait for the search (the service's run store)."""

    async def commands_after(self, run_id: str, after: int) -> list[SteerCommand]:
        """The run's commands with an id greater than `after`, oldest first."""


@dataclass
class Steered:
    """What a command did: the nodes it changed (or created), the nodes whose jobs must stop,
    and, when refused, why."""

    updates: dict[str, NodeRecord] = field(default_factory=dict)
    stop: set[str] = field(default_factory=set)
    refused: str | None = None
    created: str | None = None


def _subtree(nodes: Mapping[str, NodeRecord], node_id: str) -> list[NodeRecord]:
    out = [nodes[node_id]]
    for child in children_of(nodes, node_id):
        out += _subtree(nodes, child["id"])
    return out


def steer(nodes: Mapping[str, NodeRecord], command: SteerCommand, params: RunParams) -> Steered:
    """The effect of `command` on the tree `nodes` (see the module docstring)."""
    node = nodes.get(command.node_id)
    if node is None:
        return Steered(refused=f"no node {command.node_id}")
    if command.command == "prune":
        return _prune(nodes, node)
    if command.command == "boost":
        if node["status"] != "pending":
            return Steered(refused=f"node {node['id']} has run already ({node['status']})")
        return Steered(updates={node["id"]: {**node, "prior": BOOSTED_PRIOR}})
    return _add_step(nodes, node, command.step or "", params)


def _prune(nodes: Mapping[str, NodeRecord], node: NodeRecord) -> Steered:
    if node["status"] == "pruned":
        return Steered(refused=f"node {node['id']} is pruned already")
    out = Steered()
    for member in _subtree(nodes, node["id"]):
        if member["answer"] is not None or member["status"] in ("pruned", "failed"):
            continue
        out.updates[member["id"]] = {**member, "status": "pruned", "complete": False}
        out.stop.add(member["id"])
    if not out.updates:
        out.refused = f"nothing under node {node['id']} is left to prune"
    return out


def _add_step(
    nodes: Mapping[str, NodeRecord], parent: NodeRecord, raw: str, params: RunParams
) -> Steered:
    step = clean_step(raw)
    if not step or len(step) > MAX_STEP_CHARS:
        return Steered(refused=f"a step has 1-{MAX_STEP_CHARS} characters")
    if parent["status"] != "done":
        return Steered(refused=f"node {parent['id']} is not done ({parent['status']})")
    if parent["depth"] + 1 >= params.max_depth:
        return Steered(refused=f"a step under node {parent['id']} would pass max_depth")
    if len(nodes) >= params.max_nodes:
        return Steered(refused="the tree has max_nodes nodes")
    siblings = children_of(nodes, parent["id"])
    index = 1 + max((id_key(c["id"])[-1] for c in siblings), default=0)
    child = new_node(parent=parent, index=index, step=step, planned=parent["planned"])
    child["prior"] = BOOSTED_PRIOR
    out = Steered(updates={child["id"]: child}, created=child["id"])
    if parent["complete"]:
        # The path goes on through the new step (an answer already written stays).
        out.updates[parent["id"]] = {**parent, "complete": False}
    return out
