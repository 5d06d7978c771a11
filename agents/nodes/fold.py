"""The pure half of the search: what a job's outcome does to the tree.

`TreeFold` holds a working copy of the tree for one scheduling round. Folding an outcome in
returns nothing and does no I/O: it updates node records (collected in `changed`, the round's
state update) and queues the events that tell a UI about them (`take_events`). The scheduler
(`agents/nodes/search.py`) starts and awaits jobs and emits what the fold queued, in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.anytime import Move, assess, first_answered, greedy_phase, is_anytime, on_first_path
from agents.events import (
    CandidatesProposed,
    Event,
    NodeEvaluated,
    NodeFinished,
    NodePruned,
    NodeRevived,
    NodeStarted,
    PathCompleted,
)
from agents.grounding.evidence import step_evidence
from agents.jobs import ExecOutcome, ExpandOutcome, Job, JobOutcome, Judged, RespondOutcome
from agents.nodes import fold_anytime
from agents.nodes.judged import brief, candidates_observation, prune_reason, revivable
from agents.params import RunParams
from agents.state import NodeRecord, NodeStatus, StopReason, new_node
from agents.tree import (
    backpropagate,
    by_id,
    children_of,
    node_value,
    node_values,
    path_to,
    trim,
)
from calls.errors import BudgetExhausted

logger = logging.getLogger(__name__)

EVENT_RESULT_CHARS = 1500

Metrics = dict[str, Any]


@dataclass
class TreeFold:
    """The tree as one round sees it, the changes it made, and the events they owe."""

    run_id: str
    params: RunParams
    nodes: dict[str, NodeRecord]
    budget_hit: StopReason | None = None
    capped: bool = False
    held_back: bool = False  # this round, the call budget kept work from starting
    changed: dict[str, NodeRecord] = field(default_factory=dict)
    task: str = ""
    first: dict[str, Any] | None = None  # the first verified answer (agents.events.FirstAnswer)
    branched_at: list[str] = field(default_factory=list)  # anytime: steps branched at so far
    _events: list[Event] = field(default_factory=list)

    # -- bookkeeping ---------------------------------------------------------------------------
    def put(self, node: NodeRecord) -> None:
        self.nodes[node["id"]] = node
        self.changed[node["id"]] = node

    def update(self, node_id: str, **fields: Any) -> NodeRecord:
        node: NodeRecord = {**self.nodes[node_id], **fields}  # type: ignore[typeddict-item]
        self.put(node)
        return node

    def within_room(
        self, outcome: ExpandOutcome
    ) -> tuple[list[str], list[str], list[Judged | None]]:
        """The proposals of `outcome` that fit under `max_nodes` (the tree is capped when some
        do not), the dropped ones with those over the limit, and the kept ones' judgements."""
        steps, dropped = list(outcome.steps), list(outcome.dropped)
        scores = list(outcome.scores) or [None] * len(steps)
        room = max(0, self.params.max_nodes - len(self.nodes))
        if len(steps) > room:
            self.capped = True
            dropped += steps[room:]
            steps = steps[:room]
        return steps, dropped, scores[: len(steps)]

    def queue(self, event: Event) -> None:
        """Owe `event`: it goes out with the round's other events, in order."""
        self._events.append(event)

    def take_events(self) -> list[Event]:
        """The events queued since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def value(self, node: NodeRecord) -> float:
        """The run's one node value (`agents.tree.node_value` with the run's prior weight)."""
        return node_value(self.nodes, node["id"], self.params.prior_weight)

    # -- when to stop ----------------------------------------------------------------------------
    def completed_paths(self) -> int:
        return sum(1 for n in self.nodes.values() if n["answer"] is not None)

    def satisfied(self) -> bool:
        """A completed path is good enough to stop: its leaf's value reaches `satisfaction`
        and it has `min_depth` steps."""
        params = self.params
        if params.satisfaction is None:
            return False
        return any(
            n["answer"] is not None
            and n["visits"] > 0  # judged: an unjudged leaf's value is only its prior
            and self.value(n) >= params.satisfaction
            and n["depth"] + 1 >= params.min_depth
            for n in self.nodes.values()
        )

    def stop_reason(self) -> StopReason | None:
        """Why the search must stop now, before any new work."""
        if self.completed_paths() >= self.params.max_paths:
            return "max_paths"
        if self.satisfied():
            return "early_stop"
        if self.first_sufficient():
            return "first_answer_sufficient"
        return None

    def first_sufficient(self) -> bool:
        """Anytime search: the first answer exists and no model-free signal finds it weak
        (agents/anytime.py: `Assessment.sufficient`), so the rest of the budget is kept."""
        if not is_anytime(self.params) or greedy_phase(self.nodes):
            return False
        leaf = first_answered(self.nodes)
        return leaf is not None and assess(self.task, self.nodes, leaf).sufficient

    # -- the reserve -----------------------------------------------------------------------------
    def revive(self) -> str | None:
        """Nothing is left to run: make the best candidate the search pruned (by its judged
        score, then id) runnable again; its id, or None when the search pruned none. Only the
        search's prunes are a reserve (they carry their reason in `error`); a caller's prune
        (`agents/steering.py`) is final. The scheduler asks only while fewer than `max_paths`
        paths are complete and the budget let everything planned start."""
        reserve = [n for n in self.nodes.values() if revivable(n)]
        if not reserve:
            return None
        best = min(reserve, key=lambda n: (-(n["prior"] or 0.0), by_id(n)))
        reason = f"nothing else to run; it was pruned ({best['error']})"
        self.update(best["id"], status="pending", error=None, revived=True)
        self._events.append(NodeRevived(run_id=self.run_id, node_id=best["id"], reason=reason))
        logger.info("run=%s node=%s revived: %s", self.run_id, best["id"], reason)
        return best["id"]

    # -- job life ----------------------------------------------------------------------------------
    def started(self, job: Job) -> None:
        """A job is about to start: an executed node becomes running and says so."""
        if job.kind == "execute":
            self.update(job.node_id, status="running")
            self._events.append(NodeStarted(run_id=self.run_id, node_id=job.node_id))

    def stopped(self, job: Job, reason: str, metrics: Metrics) -> None:
        """A job the search gave up on (cancelled, or left to finish silently)."""
        if job.kind == "execute":
            self._finish_node(job.node_id, "cancelled", None, reason, metrics)

    def apply(
        self,
        job: Job,
        outcome: JobOutcome | BaseException,
        metrics: Metrics,
        elapsed_s: float = 0.0,
    ) -> None:
        """Fold a finished job in; `metrics` are the run's counts to show with its events,
        `elapsed_s` the run's search time so far."""
        if isinstance(outcome, BudgetExhausted):
            self.budget_hit = outcome.reason
            self.stopped(job, "budget exhausted", metrics)
        elif isinstance(outcome, asyncio.CancelledError):
            self.stopped(job, "cancelled", metrics)
        elif isinstance(outcome, BaseException):
            self._crashed(job, outcome, metrics)
        elif isinstance(outcome, ExecOutcome):
            status: NodeStatus = "done" if outcome.ok else "failed"
            self._finish_node(job.node_id, status, outcome, outcome.error, metrics)
        elif isinstance(outcome, ExpandOutcome) and job.kind == "branch":
            fold_anytime.branched(self, job.node_id, outcome, metrics)
        elif isinstance(outcome, ExpandOutcome):
            self._expanded(job.node_id, outcome, metrics)
        else:
            self._answered(job.node_id, outcome, metrics, elapsed_s)

    def _crashed(self, job: Job, error: BaseException, metrics: Metrics) -> None:
        logger.error(
            "run=%s node=%s %s job crashed", self.run_id, job.node_id, job.kind, exc_info=error
        )
        if job.kind == "execute":
            self._finish_node(job.node_id, "failed", None, "internal error", metrics)
        elif job.kind == "expand":  # end the path with what it found rather than lose it
            self._expanded(job.node_id, ExpandOutcome(complete=True, steps=[], dropped=[]), metrics)
        elif job.kind == "branch":  # no alternatives at this step (it stays tried)
            empty = ExpandOutcome(complete=False, steps=[], dropped=[])
            fold_anytime.branched(self, job.node_id, empty, metrics)
        else:
            self.update(job.node_id, answer_error="internal error")

    def _finish_node(
        self,
        node_id: str,
        status: NodeStatus,
        outcome: ExecOutcome | None,
        error: str | None,
        metrics: Metrics,
    ) -> None:
        fields: dict[str, Any] = {"status": status, "error": error}
        if outcome is not None:
            fields |= {
                "result": outcome.result,
                "seconds": outcome.seconds,
                "tool_calls": outcome.tool_calls,
                "sources": outcome.sources,
                "evidence": step_evidence(node_id, outcome.evidence),
            }
        node = self.update(node_id, **fields)
        self._events.append(
            NodeFinished(
                run_id=self.run_id,
                node_id=node_id,
                status=node["status"],
                result=trim(node["result"], EVENT_RESULT_CHARS) if node["result"] else None,
                error=node["error"],
                seconds=node["seconds"],
                tool_calls=len(node["tool_calls"]),
                sources=node["sources"],
                values=self.lineage_values(node_id),
                metrics=metrics,
            )
        )

    def lineage_values(self, node_id: str, *also: str) -> dict[str, float]:
        """`node_value` of the node, of each ancestor (what a change at the node can move) and
        of the nodes `also` names, rounded for the stream."""
        values = node_values(self.nodes, self.params.prior_weight)
        ids = [n["id"] for n in path_to(self.nodes, node_id)] + list(also)
        return {key: round(values[key], 6) for key in ids}

    def _backup(self, node_id: str, value: float) -> None:
        for record in backpropagate(self.nodes, node_id, value):
            self.put(record)

    def _progress(self, node_id: str, judged: Judged) -> None:
        """Store the path's progress score and back it up to the root."""
        self.update(node_id, score=judged.score)
        self._backup(node_id, judged.score)
        node = self.nodes[node_id]
        self._events.append(
            NodeEvaluated(
                run_id=self.run_id,
                node_id=node_id,
                score=judged.score,
                reason=judged.reason or None,
                value=round(self.value(node), 6),
                visits=node["visits"],
                values=self.lineage_values(node_id),
            )
        )

    def _expanded(self, node_id: str, outcome: ExpandOutcome, metrics: Metrics) -> None:
        if outcome.progress is not None:
            self._progress(node_id, outcome.progress)
        steps, dropped, scores = self.within_room(outcome)
        parent = self.nodes[node_id]
        created: list[tuple[NodeRecord, Judged | None]] = []
        first = len(children_of(self.nodes, node_id)) + 1
        for index, (step, judged) in enumerate(zip(steps, scores, strict=False), start=first):
            child = new_node(parent=parent, index=index, step=step, planned=parent["planned"][1:])
            if judged is not None:
                child["prior"] = judged.score
            self.put(child)
            created.append((child, judged))
        pruned: list[tuple[NodeRecord, str]] = []
        alive: list[Judged | None] = []
        for child, judged in created:
            reason = prune_reason(judged, self.params.min_score)
            if reason is None:
                alive.append(judged)
            else:
                pruned.append((child, reason))
                self.update(child["id"], status="pruned", error=reason)
        observed = candidates_observation(outcome.progress, alive)
        # A path whose every continuation was pruned ends here, with what it found; a complete
        # one ends here whatever its checks (its children) become.
        self.update(node_id, expanded=True, complete=outcome.complete or not alive)
        if observed is not None:
            self._backup(node_id, observed)
        self._events.append(
            CandidatesProposed(
                run_id=self.run_id,
                parent_id=node_id,
                complete=outcome.complete or not created,
                nodes=[brief(c, j) for c, j in created],
                dropped=dropped,
                observed=observed,
                values=self.lineage_values(node_id, *(c["id"] for c, _ in created)),
                seconds=outcome.seconds,
                metrics=metrics,
            )
        )
        for child, reason in pruned:
            self._events.append(NodePruned(run_id=self.run_id, node_id=child["id"], reason=reason))

    def _answered(
        self, node_id: str, outcome: RespondOutcome, metrics: Metrics, elapsed_s: float
    ) -> None:
        self.update(
            node_id,
            answer=outcome.answer,
            answer_error=outcome.error,
            grounding=outcome.grounding,
            confidence=outcome.confidence,
        )
        self._events.append(
            PathCompleted(
                run_id=self.run_id,
                node_id=node_id,
                path=[n["id"] for n in path_to(self.nodes, node_id)],
                answer=outcome.answer,
                groundedness=outcome.grounding["groundedness"] if outcome.grounding else None,
                seconds=outcome.seconds,
                metrics=metrics,
            )
        )
        if (
            self.first is None
            and outcome.answer is not None
            and on_first_path(node_id)
            and (first := first_answered(self.nodes)) is not None
            and first["id"] == node_id
        ):
            fold_anytime.first_ready(self, node_id, outcome, metrics, elapsed_s)

    def begin(self, move: Move) -> None:
        """An anytime move is about to be made (`fold_anytime.begin`)."""
        fold_anytime.begin(self, move)


__all__ = ["TreeFold", "candidates_observation", "fold_of", "prune_reason", "revivable"]


def fold_of(run_id: str, params: RunParams, state: Mapping[str, Any]) -> TreeFold:
    """A fold over the tree of a graph state."""
    return TreeFold(
        run_id=run_id,
        params=params,
        nodes=dict(state.get("nodes", {})),
        budget_hit=state.get("budget_hit"),
        capped=bool(state.get("capped", False)),
        task=str(state.get("task", "")),
        first=state.get("first"),
        branched_at=list(state.get("branched_at") or []),
    )
