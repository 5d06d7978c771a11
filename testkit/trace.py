"""Rebuild a run's tree from its events alone (a trace), for replay, UIs and audits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agents.events import EVENT_ADAPTER, Event
from agents.state import NodeRecord, new_node
from agents.tree import backpropagate


def tree_from_events(events: Iterable[Event | Mapping[str, Any]]) -> dict[str, NodeRecord]:
    """The tree the events describe: structure, statuses, scores, backed-up values and
    candidate answers. Result texts are as the events carry them (trimmed)."""
    nodes: dict[str, NodeRecord] = {}
    for raw in events:
        event = raw if not isinstance(raw, Mapping) else EVENT_ADAPTER.validate_python(raw)
        if event.type == "plan":
            root = event.root
            nodes[root.node_id] = new_node(
                parent=None, index=int(root.node_id[1:]), step=root.step, planned=event.steps[1:]
            )
        elif event.type == "candidates":
            parent = nodes[event.parent_id]
            for brief in event.nodes:
                index = int(brief.node_id.rsplit(".", 1)[1])
                child = new_node(
                    parent=parent, index=index, step=brief.step, planned=parent["planned"][1:]
                )
                child["prior"] = brief.score
                nodes[child["id"]] = child
            parent["expanded"] = True
            parent["complete"] = event.complete
            if event.observed is not None:  # the expansion's observation, one visit up the path
                for record in backpropagate(nodes, event.parent_id, event.observed):
                    nodes[record["id"]] = record
        elif event.type == "pruned":
            nodes[event.node_id] |= {"status": "pruned", "error": event.reason}
        elif event.type == "revived":
            nodes[event.node_id] |= {"status": "pending", "error": None}
            _settle_completion(nodes, nodes[event.node_id]["parent_id"])
        elif event.type == "node_started":
            nodes[event.node_id]["status"] = "running"
        elif event.type == "node_finished":
            nodes[event.node_id] |= {
                "status": event.status,
                "result": event.result,
                "error": event.error,
                "seconds": event.seconds,
                "sources": list(event.sources),
            }
        elif event.type == "evaluated":
            nodes[event.node_id]["score"] = event.score
            for record in backpropagate(nodes, event.node_id, event.score):
                nodes[record["id"]] = record
        elif event.type == "path_completed":
            nodes[event.node_id]["answer"] = event.answer
    return nodes


def _settle_completion(nodes: dict[str, NodeRecord], parent_id: str | None) -> None:
    # The engine ends a path whose every proposed continuation was pruned.
    if parent_id is None:
        return
    children = [n for n in nodes.values() if n["parent_id"] == parent_id]
    # A parent already complete (its children were checks of its answer) stays complete.
    parent = nodes[parent_id]
    parent["complete"] = parent["complete"] or all(c["status"] == "pruned" for c in children)
