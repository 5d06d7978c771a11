"""Pure functions over the tree of node records: paths, runnable sets, candidate hygiene."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from agents.state import NodeRecord, Source, id_key

_LEADING_MARK = re.compile(r"^\s*(?:step\s*)?(?:\d+[.):]|[-*•]|\(\d+\))\s*", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w\s]")
# The fences' markers (agents/fencing.py): a proposed step that carries one echoes the prompt's
# markup (a small model writes ">>>NEXT STEP<<<") or a tool result's attempt at it, never work.
_MARKUP = re.compile(r"<<<|>>>")

T = TypeVar("T")

NEUTRAL_VALUE = 0.5
"""The value of a node nothing has judged yet (no prior, no visit): the middle of [0, 1]."""

PRIOR_WEIGHT = 1.0
"""Default pseudo-visits a candidate's score counts for in its node's value (`node_value`)."""


def path_to(nodes: Mapping[str, NodeRecord], node_id: str) -> list[NodeRecord]:
    """The nodes from the root down to `node_id`, root included."""
    path: list[NodeRecord] = []
    current: str | None = node_id
    while current is not None:
        node = nodes[current]
        path.append(node)
        current = node["parent_id"]
    path.reverse()
    return path


def children_of(nodes: Mapping[str, NodeRecord], node_id: str) -> list[NodeRecord]:
    """Direct children of a node in the replanner's order."""
    return sorted((n for n in nodes.values() if n["parent_id"] == node_id), key=by_id)


def siblings_of(nodes: Mapping[str, NodeRecord], node_id: str) -> list[NodeRecord]:
    """The node and the other children of its parent (the roots, for a root), in id order."""
    parent = nodes[node_id]["parent_id"]
    return sorted((n for n in nodes.values() if n["parent_id"] == parent), key=by_id)


def by_id(node: NodeRecord) -> tuple[int, ...]:
    """Sort key: depth-first order of ids (`n1` < `n1.1` < `n1.1.1` < `n1.2`)."""
    return id_key(node["id"])


def clean_step(text: str) -> str:
    """A proposed step as it is stored: list markers stripped, whitespace collapsed."""
    return _SPACE.sub(" ", _LEADING_MARK.sub("", text)).strip()


def step_key(text: str) -> str:
    """The identity of a step for de-duplication: case, punctuation and spacing ignored."""
    return _SPACE.sub(" ", _NON_WORD.sub(" ", clean_step(text).casefold())).strip()


def usable_step(step: str) -> bool:
    """Whether a cleaned proposed step is work: it has a word, and carries none of the fences'
    markers (`<<<`, `>>>`), which only an echo of the prompt's markup or a tool result's attempt
    at it would. The planner's steps and the replanner's proposals both pass through it."""
    return bool(step_key(step)) and not _MARKUP.search(step)


def select_candidates(
    proposals: Iterable[str],
    *,
    taken: Iterable[str],
    limit: int,
) -> tuple[list[str], list[str]]:
    """Keep at most `limit` distinct, non-empty proposals not already in `taken`.

    `taken` holds the steps of the path's ancestors and of existing siblings. Returns the kept
    steps in the proposer's order and the dropped ones (duplicates, empties, over the limit,
    and steps that carry a fence's markers `<<<` or `>>>`).
    Never pads: fewer good proposals mean fewer children.
    """
    kept, dropped = pick_candidates([(raw, None) for raw in proposals], taken=taken, limit=limit)
    return [step for step, _ in kept], dropped


def pick_candidates(
    proposals: Sequence[tuple[str, T]],
    *,
    taken: Iterable[str],
    limit: int,
) -> tuple[list[tuple[str, T]], list[str]]:
    """`select_candidates` for proposals that carry a payload (e.g. their judgement): the kept
    (cleaned step, payload) pairs in the proposer's order, and the dropped raw steps."""
    seen = {step_key(step) for step in taken}
    kept: list[tuple[str, T]] = []
    dropped: list[str] = []
    for raw, payload in proposals:
        step = clean_step(raw)
        key = step_key(step)
        if not usable_step(step) or key in seen or len(kept) >= limit:
            dropped.append(raw)
            continue
        seen.add(key)
        kept.append((step, payload))
    return kept, dropped


def runnable(nodes: Mapping[str, NodeRecord], busy: set[str]) -> list[NodeRecord]:
    """Pending (or orphaned running) nodes whose parent is done and that no job is running."""
    out: list[NodeRecord] = []
    for node in nodes.values():
        if node["id"] in busy or node["status"] not in ("pending", "running"):
            continue
        parent = nodes.get(node["parent_id"]) if node["parent_id"] else None
        if parent is None or parent["status"] == "done":
            out.append(node)
    return out


def from_reserve(nodes: Mapping[str, NodeRecord], leaf: NodeRecord) -> bool:
    """Whether the path ending at `leaf` runs through a candidate revived from the reserve
    (a node kept from before the flag existed counts as not revived)."""
    return any(node.get("revived", False) for node in path_to(nodes, leaf["id"]))


def path_sources(path: Iterable[NodeRecord]) -> list[Source]:
    """The distinct sources of a path, first occurrence first."""
    seen: set[str] = set()
    out: list[Source] = []
    for node in path:
        for source in node["sources"]:
            if source["url"] not in seen:
                seen.add(source["url"])
                out.append(source)
    return out


TRIM_MARK = " …[truncated]"


def trim(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 15)].rstrip() + TRIM_MARK


def blended_value(
    value_sum: float, visits: int, prior: float | None, prior_weight: float = PRIOR_WEIGHT
) -> float:
    """(w·p + S) / (w + N): N observed scores summing to S, with the prior p counted as w
    pseudo-observations. With no prior, S / N; with nothing at all, `NEUTRAL_VALUE`."""
    weight = prior_weight if prior is not None else 0.0
    denominator = weight + visits
    if denominator <= 0:
        return NEUTRAL_VALUE
    return (weight * (prior or 0.0) + value_sum) / denominator


def own_value(node: NodeRecord, prior_weight: float = PRIOR_WEIGHT) -> float:
    """What the node's own judgements say: its prior blended with its progress score,
    (w·p + s) / (w + 1)."""
    judged = node["score"] is not None
    return blended_value(node["score"] or 0.0, 1 if judged else 0, node["prior"], prior_weight)


_LIVE = ("pending", "running", "done")


def node_values(
    nodes: Mapping[str, NodeRecord], prior_weight: float = PRIOR_WEIGHT
) -> dict[str, float]:
    """`node_value` of every node, computed bottom-up in one pass (for selection)."""
    kids: dict[str, list[str]] = {}
    for node in nodes.values():
        if node["parent_id"] is not None and node["status"] in _LIVE:
            kids.setdefault(node["parent_id"], []).append(node["id"])
    values: dict[str, float] = {}
    for node in sorted(nodes.values(), key=lambda n: -n["depth"]):
        below = [values[k] for k in kids.get(node["id"], [])]
        values[node["id"]] = max(below) if below else own_value(node, prior_weight)
    return values


def node_value(
    nodes: Mapping[str, NodeRecord], node_id: str, prior_weight: float = PRIOR_WEIGHT
) -> float:
    """THE value of a node, used by selection (mcts), early stop, the vote's fallback and the
    vote's evidence: the best answer its subtree promises. A node with live children (pending,
    running or done) is worth its best child; any other is worth its own judgements
    (`own_value`: prior and progress score blended)."""
    below = [
        node_value(nodes, c["id"], prior_weight)
        for c in children_of(nodes, node_id)
        if c["status"] in _LIVE
    ]
    return max(below) if below else own_value(nodes[node_id], prior_weight)


def backpropagate(nodes: Mapping[str, NodeRecord], node_id: str, value: float) -> list[NodeRecord]:
    """`value` added to the node and every ancestor: value sum and visit count, kept apart.
    Returns the updated records (the caller stores them)."""
    updated: list[NodeRecord] = []
    for node in path_to(nodes, node_id):
        updated.append(
            {**node, "value_sum": node["value_sum"] + value, "visits": node["visits"] + 1}
        )
    return updated
