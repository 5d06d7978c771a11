"""The graph state: plain, JSON-serialisable data that a LangGraph checkpointer can save.

The tree is a dict of node records keyed by id, merged by id through a reducer. No Python object
with parent pointers, no deque, no set: a checkpoint is the whole truth about a run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from agents.grounding.evidence import Evidence
from agents.grounding.verify import Grounding

NodeStatus = Literal["pending", "running", "done", "failed", "pruned", "cancelled"]
Phase = Literal["plan", "review", "search", "finish", "done", "rejected"]
StopReason = Literal[
    "max_paths",
    "frontier_exhausted",
    "budget_llm_calls",
    "budget_tokens",
    "max_nodes",
    "deadline",
    "early_stop",
    "first_answer_sufficient",
    "cancelled",
    "error",
]


class Source(TypedDict):
    title: str
    url: str


class ToolCallRecord(TypedDict):
    name: str
    args: dict[str, Any]
    ok: bool
    error_kind: str | None
    seconds: float


class NodeRecord(TypedDict):
    """One step of one path. Ids are paths of sibling numbers: the root is `n1`, its second
    child `n1.2`; they do not depend on the order in which work finished."""

    id: str
    parent_id: str | None
    depth: int
    step: str
    planned: list[str]
    status: NodeStatus
    result: str | None
    error: str | None
    tool_calls: list[ToolCallRecord]
    sources: list[Source]
    evidence: list[Evidence]
    seconds: float | None
    expanded: bool
    complete: bool
    answer: str | None
    answer_error: str | None
    grounding: Grounding | None
    # The mean log-probability the model gave the tokens of the answer (the local model's,
    # calls/local_confidence.py; None from other models). Recorded, not yet weighed in any
    # choice. Absent from a node kept before the field existed.
    confidence: NotRequired[float | None]
    prior: float | None
    score: float | None
    value_sum: float
    visits: int
    revived: bool  # run from the reserve: its paths corroborate, they are not voted on


class ErrorInfo(TypedDict):
    code: str
    message: str


class Turn(TypedDict):
    """An earlier question on the run's thread and its answer."""

    run_id: str
    question: str
    answer: str


class Recollection(TypedDict):
    """What a run on a thread starts from (agents/recall.py): the latest earlier turns and the
    evidence most relevant to its task."""

    turns: list[Turn]
    evidence: list[Evidence]


def id_key(node_id: str) -> tuple[int, ...]:
    """Sort key of a node id: depth-first, siblings in the replanner's order."""
    return tuple(int(part) for part in node_id[1:].split("."))


def merge_nodes(left: dict[str, NodeRecord], right: dict[str, NodeRecord]) -> dict[str, NodeRecord]:
    """Reducer: a node update replaces the record with the same id; others are kept."""
    return {**left, **right}


class RunState(TypedDict, total=False):
    run_id: str
    task: str
    params: dict[str, Any]
    plan: list[str]
    nodes: Annotated[dict[str, NodeRecord], merge_nodes]
    phase: Phase
    budget_hit: StopReason | None
    capped: bool
    stop_reason: StopReason | None
    metrics: dict[str, Any]
    elapsed_s: float
    final: dict[str, Any] | None  # the chosen answer (agents.answer.AnswerFields), as data
    first: dict[str, Any] | None  # the first verified answer (agents.events.FirstAnswer)
    branched_at: list[str]  # anytime search: the steps alternatives were asked for at
    known: Recollection | None
    steered_through: int  # the id of the last steering command taken


def new_node(
    *,
    parent: NodeRecord | None,
    index: int,
    step: str,
    planned: list[str],
) -> NodeRecord:
    """A fresh pending node: the `index`-th child (from 1) of `parent`, or the root."""
    return NodeRecord(
        id=f"{parent['id']}.{index}" if parent else f"n{index}",
        parent_id=parent["id"] if parent else None,
        depth=parent["depth"] + 1 if parent else 0,
        step=step,
        planned=list(planned),
        status="pending",
        result=None,
        error=None,
        tool_calls=[],
        sources=[],
        evidence=[],
        seconds=None,
        expanded=False,
        complete=False,
        answer=None,
        answer_error=None,
        grounding=None,
        confidence=None,
        prior=None,
        score=None,
        value_sum=0.0,
        visits=0,
        revived=False,
    )
