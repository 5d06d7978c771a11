"""Judgements of candidates as the fold reads them and shows them (`brief`): which are pruned
(and why), what an expansion backs up, and which pruned ones the reserve may revive. Pure."""

from __future__ import annotations

from agents.events import NodeBrief
from agents.jobs import Judged
from agents.state import NodeRecord


def brief(node: NodeRecord, judged: Judged | None = None, reason: str | None = None) -> NodeBrief:
    """A new node as its event shows it, with the replanner's judgement of it, if any."""
    return NodeBrief(
        node_id=node["id"],
        parent_id=node["parent_id"],
        depth=node["depth"],
        step=node["step"],
        score=judged.score if judged else None,
        reason=((judged.reason or None) if judged else None) or reason,
    )


def revivable(node: NodeRecord) -> bool:
    """A candidate the search pruned (with its reason), never run."""
    return node["status"] == "pruned" and node["error"] is not None and node["seconds"] is None


def prune_reason(judged: Judged | None, min_score: float) -> str | None:
    """Why a judged candidate is pruned, or None to keep it (unjudged ones are kept)."""
    if judged is None:
        return None
    if not judged.viable:
        return f"not viable: {judged.reason}" if judged.reason else "not viable"
    if judged.score < min_score:
        return f"score {judged.score:.2f} below {min_score:.2f}" + (
            f": {judged.reason}" if judged.reason else ""
        )
    return None


def candidates_observation(progress: Judged | None, live: list[Judged | None]) -> float | None:
    """What the candidates back up through their node and its ancestors (one visit each): the
    best score among the live continuations the replanner proposed (the value the node now has
    through them). None when they back up nothing: when the evaluator judged the path (its
    progress score is the expansion's observation, backed up by `_progress`) or no live
    continuation has a score."""
    if progress is not None:
        return None
    scores = [judged.score for judged in live if judged is not None]
    return max(scores) if scores else None
