"""Trees of fresh nodes for the search tests, written as steps and their parents' steps."""

from __future__ import annotations

from agents.state import NodeRecord, new_node


def tree(*steps: tuple[str, str | None]) -> dict[str, NodeRecord]:
    """Pending nodes by id from `(step, parent step)` pairs in order (the parent's first; the
    root's parent is None); each is its parent's next child."""
    by_step: dict[str, NodeRecord] = {}
    children: dict[str | None, int] = {}
    for step, parent in steps:
        children[parent] = children.get(parent, 0) + 1
        above = by_step[parent] if parent is not None else None
        by_step[step] = new_node(parent=above, index=children[parent], step=step, planned=[])
    return {node["id"]: node for node in by_step.values()}
