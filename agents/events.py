"""Typed progress events, discriminated by `type`. A UI can redraw the whole tree from them.

The engine emits them through an `EventSink`; the service numbers and persists them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agents.answer import ChosenBy, EndFields, FirstAnswer
from agents.params import RunParams
from agents.state import NodeStatus, Source, StopReason


def _now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The run this event belongs to.")
    ts: datetime = Field(default_factory=_now, description="When the engine created the event.")


class NodeBrief(BaseModel):
    """A node as it is created: enough to draw it."""

    node_id: str
    parent_id: str | None
    depth: int = Field(ge=0)
    step: str
    score: float | None = Field(
        default=None,
        description="The replanner's score of this candidate, its prior (null: unscored).",
    )
    reason: str | None = Field(default=None, description="The replanner's one-line reason.")


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    task: str
    params: dict[str, Any]

    @classmethod
    def of(cls, run_id: str, task: str, params: RunParams) -> RunStarted:
        """A run's first event: its task and every parameter, as the run was asked."""
        return cls(run_id=run_id, task=task, params=params.model_dump(mode="json"))


class PlanMade(_Event):
    type: Literal["plan"] = "plan"
    steps: list[str] = Field(description="The planner's steps, in order.")
    root: NodeBrief = Field(description="The root node, seeded with the first step.")
    seconds: float | None = Field(default=None, description="The planner's wall time.")


class PlanInterrupt(_Event):
    """The run waits for its plan to be approved, edited or rejected (`approve_plan`)."""

    type: Literal["interrupt"] = "interrupt"
    kind: Literal["plan"] = Field(default="plan", description="What the run waits for.")
    steps: list[str] = Field(description="The plan to review, in order.")
    metrics: dict[str, Any] = Field(default_factory=dict)


class PlanReviewed(_Event):
    """How the plan was answered; the search goes on from it (unless it was rejected)."""

    type: Literal["plan_reviewed"] = "plan_reviewed"
    action: Literal["approve", "edit", "reject"]
    steps: list[str] = Field(description="The plan the search follows (empty: rejected).")
    root: NodeBrief | None = Field(
        default=None, description="The root node, seeded with the first step (null: rejected)."
    )
    by: str | None = Field(default=None, description="The name of the key that answered.")


class CommandApplied(_Event):
    """A caller's steering command, as the search applied (or refused) it."""

    type: Literal["steered"] = "steered"
    command: Literal["prune", "boost", "add_step"]
    node_id: str = Field(description="The node it named (the parent, for add_step).")
    step: str | None = Field(default=None, description="The added step (add_step).")
    by: str | None = Field(default=None, description="The name of the key that sent it.")
    applied: bool
    reason: str | None = Field(default=None, description="Why it was refused.")
    pruned: list[str] = Field(default_factory=list, description="The nodes it pruned.")
    node: NodeBrief | None = Field(default=None, description="The node it added (add_step).")


class NodeStarted(_Event):
    type: Literal["node_started"] = "node_started"
    node_id: str


class ToolCalled(_Event):
    type: Literal["tool_call"] = "tool_call"
    node_id: str
    name: str
    args: dict[str, Any]
    ok: bool
    error_kind: str | None = None
    seconds: float = Field(ge=0)


class NodeFinished(_Event):
    type: Literal["node_finished"] = "node_finished"
    node_id: str
    status: NodeStatus
    result: str | None = Field(description="The step's result, trimmed for the stream.")
    error: str | None = None
    seconds: float | None = None
    tool_calls: int = Field(ge=0)
    sources: list[Source] = Field(default_factory=list)
    values: dict[str, float] = Field(
        default_factory=dict,
        description="The engine's node value (agents.tree.node_value) after this event of every "
        "node it can change: this node and its ancestors.",
    )
    metrics: dict[str, Any] | None = Field(
        default=None, description="The run's model calls, tokens and tool calls so far."
    )


class CandidatesProposed(_Event):
    type: Literal["candidates"] = "candidates"
    parent_id: str
    complete: bool = Field(description="True when the replanner ended the path here.")
    nodes: list[NodeBrief] = Field(description="New child nodes, in the replanner's order.")
    dropped: list[str] = Field(
        default_factory=list, description="Proposals dropped as duplicates or over the limits."
    )
    observed: float | None = Field(
        default=None,
        description="The expansion's observation, backed up as one visit through the parent and "
        "each ancestor: the best score among the candidates not pruned (null: none; a progress "
        "score comes as `evaluated` instead).",
    )
    values: dict[str, float] = Field(
        default_factory=dict,
        description="The engine's node value (agents.tree.node_value) after this event of every "
        "node it can change: the parent, its ancestors and the new nodes.",
    )
    seconds: float | None = Field(
        default=None, description="Wall time of the expansion (replanner and evaluator calls)."
    )
    metrics: dict[str, Any] | None = Field(
        default=None, description="The run's model calls, tokens and tool calls so far."
    )


class NodeEvaluated(_Event):
    type: Literal["evaluated"] = "evaluated"
    node_id: str
    score: float = Field(ge=0, le=1, description="Progress of the path ending here.")
    reason: str | None = None
    value: float = Field(
        description="The node's value after this score (agents.tree.node_value: its prior "
        "blended with this score)."
    )
    visits: int = Field(ge=0)
    values: dict[str, float] = Field(
        default_factory=dict,
        description="The engine's node value (agents.tree.node_value) after this event of every "
        "node it can change: this node and its ancestors.",
    )


class NodePruned(_Event):
    type: Literal["pruned"] = "pruned"
    node_id: str
    reason: str


class NodeRevived(_Event):
    """A candidate the search had pruned runs after all: nothing else was left to run, fewer
    paths than `max_paths` were complete and the budget could still carry it to an answer."""

    type: Literal["revived"] = "revived"
    node_id: str
    reason: str


class PathCompleted(_Event):
    type: Literal["path_completed"] = "path_completed"
    node_id: str = Field(description="The leaf that ends the path.")
    path: list[str] = Field(description="Node ids from the root to the leaf.")
    answer: str | None = Field(description="The candidate answer; null when writing it failed.")
    groundedness: float | None = Field(
        default=None, description="Share of the answer's sentences with a verified citation."
    )
    seconds: float | None = Field(default=None, description="The responder's wall time.")
    metrics: dict[str, Any] | None = Field(
        default=None, description="The run's model calls, tokens and tool calls so far."
    )


class AnswerReady(FirstAnswer, _Event):
    """The first verified answer, as soon as it exists (anytime search): provisional until the
    run's `done`, which says whether it was kept (`chosen_by`)."""

    type: Literal["answer_ready"] = "answer_ready"
    provisional: bool = Field(
        default=True, description="True while the search may still replace it."
    )


class Branched(_Event):
    """Alternatives were opened at a weak step of the answered path (anytime search): sibling
    steps meant to retrieve differently, each followed to its own answer."""

    type: Literal["branched"] = "branched"
    node_id: str = Field(description="The step the alternatives stand beside.")
    parent_id: str | None = Field(description="Their parent (null: they are roots).")
    reasons: list[str] = Field(
        default_factory=list, description="The model-free signals that made the answer weak."
    )
    nodes: list[NodeBrief] = Field(description="The alternatives, in the replanner's order.")
    dropped: list[str] = Field(
        default_factory=list, description="Proposals dropped as repeats or over the limit."
    )
    seconds: float | None = Field(default=None, description="Wall time of the proposal.")
    metrics: dict[str, Any] | None = Field(
        default=None, description="The run's model calls, tokens and tool calls so far."
    )


class VoteCast(_Event):
    type: Literal["vote"] = "vote"
    candidates: list[str] = Field(description="Leaf ids of the candidate answers voted on.")
    ineligible: list[str] = Field(
        default_factory=list,
        description="Leaf ids of candidates left out for groundedness under min_groundedness.",
    )
    revived: list[str] = Field(
        default_factory=list,
        description="Leaf ids of paths run from the reserve: not voted on while a searched "
        "path has an answer; they corroborate.",
    )
    agreeing: list[str] = Field(
        default_factory=list,
        description="Leaf ids of the other paths whose answer agrees with the chosen one; "
        "their verified citations join the answer's.",
    )
    values: dict[str, float] = Field(
        default_factory=dict,
        description="Each judged candidate's value (its leaf's node value), shown to the voter "
        "as evidence and used by the fallback.",
    )
    chosen_id: str
    method: Literal["llm", "single", "fallback"]
    reason: str | None = None
    seconds: float | None = Field(default=None, description="The vote's wall time.")
    chosen_by: ChosenBy | None = Field(
        default=None, description="How the answer was chosen (see `done`)."
    )
    options: list[list[str]] = Field(
        default_factory=list,
        description="Anytime search: the candidates grouped by agreeing answers (leaf ids); "
        "the first group holds the first answer.",
    )


class RunDone(EndFields, _Event):
    """The run's end with its answer (the fields of agents/answer.py: `EndFields`)."""

    type: Literal["done"] = "done"
    answer: str
    stop_reason: StopReason


class RunError(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str = Field(description="Safe to show a user; never internal exception text.")
    stop_reason: StopReason = "error"
    metrics: dict[str, Any] = Field(default_factory=dict)


class RunCancelled(_Event):
    type: Literal["cancelled"] = "cancelled"
    reason: str | None = Field(default=None, description="Why, when not a caller's cancel.")
    stop_reason: StopReason = "cancelled"
    metrics: dict[str, Any] = Field(default_factory=dict)


Event = Annotated[
    RunStarted
    | PlanMade
    | PlanInterrupt
    | PlanReviewed
    | CommandApplied
    | NodeStarted
    | ToolCalled
    | NodeFinished
    | CandidatesProposed
    | NodeEvaluated
    | NodePruned
    | NodeRevived
    | PathCompleted
    | AnswerReady
    | Branched
    | VoteCast
    | RunDone
    | RunError
    | RunCancelled,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EndStatus = Literal["done", "failed", "cancelled"]
# How a run ends: its terminal event's type, and the status the run then has. Every stream of
# a run's events ends with exactly one of these types.
STATUS_OF_TERMINAL: dict[str, EndStatus] = {
    "done": "done",
    "error": "failed",
    "cancelled": "cancelled",
}
TERMINAL_TYPES = frozenset(STATUS_OF_TERMINAL)
PAUSE_TYPES = frozenset({"interrupt"})
"""Events after which a run waits for a caller's answer, its task over until then."""

EventSink = Callable[[Event], Awaitable[None]]
EventBatchSink = Callable[[Sequence[Event]], Awaitable[None]]
"""A sink for the events of one moment of a run, in order: a store writes them at once."""


def one_at_a_time(sink: EventSink) -> EventBatchSink:
    """A batch sink that hands `sink` each event in turn."""

    async def each(events: Sequence[Event]) -> None:
        for event in events:
            await sink(event)

    return each


async def discard(_: Event) -> None:
    """An event sink that drops everything."""
