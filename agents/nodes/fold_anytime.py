"""The anytime search's part of the fold (agents/anytime.py): what a move, a proposal of
alternatives and the first answer do to the tree, and the events they owe. Pure, as the rest
of the fold: no I/O, only the fold's records and queued events change."""

from __future__ import annotations

from typing import Any, Protocol

from agents.anytime import Move, assess, first_answered
from agents.events import AnswerReady, Branched, CandidatesProposed, Event, NodePruned
from agents.jobs import ExpandOutcome, Judged, RespondOutcome
from agents.nodes.judged import brief, prune_reason
from agents.params import RunParams
from agents.state import NodeRecord, new_node
from agents.tree import children_of, path_to, siblings_of

Metrics = dict[str, Any]


class TreeFold(Protocol):
    """What of the fold (agents/nodes/fold.py: `TreeFold`) these moves use."""

    run_id: str
    params: RunParams
    nodes: dict[str, NodeRecord]
    task: str
    capped: bool
    first: dict[str, Any] | None
    branched_at: list[str]

    def put(self, node: NodeRecord) -> None: ...

    def update(self, node_id: str, **fields: Any) -> NodeRecord: ...

    def queue(self, event: Event) -> None: ...

    def within_room(
        self, outcome: ExpandOutcome
    ) -> tuple[list[str], list[str], list[Judged | None]]: ...

    def lineage_values(self, node_id: str, *also: str) -> dict[str, float]: ...


def begin(fold: TreeFold, move: Move) -> None:
    """Record an anytime move about to be made: a step branched at is never branched at
    again; a `deepen` adds the next planned step after the first path's leaf (no model
    call), as a check of its answer."""
    if move.kind == "branch":
        fold.branched_at.append(move.node_id)
        return
    leaf = fold.nodes[move.node_id]
    index = len(children_of(fold.nodes, leaf["id"])) + 1
    child = new_node(parent=leaf, index=index, step=move.step, planned=leaf["planned"][1:])
    fold.put(child)
    fold.queue(
        CandidatesProposed(
            run_id=fold.run_id,
            parent_id=leaf["id"],
            complete=True,
            nodes=[brief(child, reason="planned step not yet run")],
            values=fold.lineage_values(leaf["id"], child["id"]),
        )
    )


def branched(fold: TreeFold, node_id: str, outcome: ExpandOutcome, metrics: Metrics) -> None:
    """Alternatives to the step at `node_id` become its siblings (roots beside a root)."""
    if node_id not in fold.branched_at:
        fold.branched_at.append(node_id)
    weak = fold.nodes[node_id]
    parent = fold.nodes[weak["parent_id"]] if weak["parent_id"] else None
    steps, dropped, scores = fold.within_room(outcome)
    index = len(siblings_of(fold.nodes, node_id)) + 1
    created: list[tuple[NodeRecord, Judged | None]] = []
    for offset, (step, judged) in enumerate(zip(steps, scores, strict=False)):
        child = new_node(
            parent=parent, index=index + offset, step=step, planned=list(weak["planned"])
        )
        if judged is not None:
            child["prior"] = judged.score
        fold.put(child)
        created.append((child, judged))
    leaf = first_answered(fold.nodes)
    reasons = assess(fold.task, fold.nodes, leaf).reasons() if leaf is not None else []
    fold.queue(
        Branched(
            run_id=fold.run_id,
            node_id=node_id,
            parent_id=weak["parent_id"],
            reasons=reasons,
            nodes=[brief(c, j) for c, j in created],
            dropped=dropped,
            seconds=outcome.seconds,
            metrics=metrics,
        )
    )
    # Judged unworthy, an alternative is pruned as any candidate is.
    for child, judged in created:
        reason = prune_reason(judged, fold.params.min_score)
        if reason is not None:
            fold.update(child["id"], status="pruned", error=reason)
            fold.queue(NodePruned(run_id=fold.run_id, node_id=child["id"], reason=reason))


def first_ready(
    fold: TreeFold, node_id: str, outcome: RespondOutcome, metrics: Metrics, elapsed_s: float
) -> None:
    """The first path's answer exists: it is the run's first answer (`answer_ready`)."""
    grounding = outcome.grounding
    ready = AnswerReady(
        run_id=fold.run_id,
        answer=outcome.answer or "",
        node_id=node_id,
        path=[n["id"] for n in path_to(fold.nodes, node_id)],
        metrics=metrics,
        elapsed_s=round(max(0.0, elapsed_s), 4),
        citations=grounding["citations"] if grounding else [],
        groundedness=grounding["groundedness"] if grounding else None,
        unsupported=grounding["unsupported"] if grounding else [],
        rejected=grounding["rejected"] if grounding else [],
    )
    fold.first = ready.model_dump(mode="json", exclude={"run_id", "ts", "type", "provisional"})
    fold.queue(ready)
