"""Expansion job: the replanner ends the path or proposes distinct next steps, each with its own
judgement (score, viable, reason), in one call; the evaluator judges the path's progress after
it only where that judgement can change the search (`agents.nodes.evaluator.progress_wanted`)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agents.anytime import assess, first_answered, is_anytime, siblings_room
from agents.context import RunContext
from agents.grounding.verify import path_complete_supported, question_entities
from agents.jobs import ExpandOutcome, Judged
from agents.nodes.evaluator import progress_wanted, score_progress
from agents.nodes.judged import prune_reason
from agents.params import RunParams
from agents.prompts import alternatives_messages, path_evidence_ledger, replanner_messages
from agents.state import NodeRecord
from agents.tree import children_of, path_to, pick_candidates, siblings_of
from calls.errors import BudgetExhausted, ModelError
from calls.structured import call_structured

logger = logging.getLogger(__name__)


class Candidate(BaseModel):
    """One proposed next step with the replanner's judgement of it."""

    step: str = Field(description="One concrete next step.")
    score: float = Field(
        ge=0, le=1, description="How much doing it next would advance the task (1: decisive)."
    )
    viable: bool = Field(default=True, description="False: off topic, infeasible or a repeat.")
    reason: str = Field(default="", description="One line.")


class Replan(BaseModel):
    """The replanner's structured output: propose and value in one reply."""

    complete: bool = Field(description="True when the results so far suffice to answer the task.")
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="Alternative next steps, best first, each judged; empty when complete.",
    )


Proposal = tuple[str, Judged | None]


@functools.cache
def replan_schema() -> dict[str, Any]:
    """The reply's JSON Schema, written out flat (no `$ref`: not every provider or grammar
    builder resolves one). Built once (shared: never modify it)."""
    fields = Candidate.model_json_schema()["properties"]
    properties = {
        name: {k: v for k, v in spec.items() if k not in ("title", "default")}
        for name, spec in fields.items()
    }
    return {
        "title": "Replan",
        "description": Replan.__doc__,
        "type": "object",
        "properties": {
            "complete": {
                "type": "boolean",
                "description": Replan.model_fields["complete"].description,
            },
            "candidates": {
                "type": "array",
                "description": Replan.model_fields["candidates"].description,
                "items": {
                    "type": "object",
                    "properties": properties,
                    "required": ["step", "score", "viable", "reason"],
                },
            },
        },
        "required": ["complete", "candidates"],
    }


def read_replan(out: Any) -> tuple[bool, list[Proposal]]:
    """(complete, proposals) from a reply. Raises ValidationError for a reply the replanner
    should be asked again for."""
    replan = Replan.model_validate(out)
    return replan.complete, [
        (c.step, Judged(score=c.score, viable=c.viable, reason=c.reason)) for c in replan.candidates
    ]


def expansion_width(params: RunParams) -> int:
    """How many next steps one expansion may propose: one in the anytime search, whose every
    path is a chain (it branches only at weak steps, `branch`), else `max_candidates`."""
    return 1 if is_anytime(params) else params.max_candidates


async def _replan(
    ctx: RunContext, path: list[NodeRecord], node_id: str
) -> tuple[bool, list[Proposal]]:
    tracker = ctx.tracker("replanner", node_id)
    try:
        return await call_structured(
            ctx.model("replanner"),
            replan_schema(),
            replanner_messages(
                ctx.task,
                ctx.shown(path),
                expansion_width(ctx.params),
                ctx.settings.result_max_chars,
            ),
            config=ctx.config(tracker, node_id=node_id),
            parse=read_replan,
            what="replanner",
        )
    except ModelError as e:
        # Follow the plan rather than lose the path.
        logger.warning(
            "run=%s node=%s replanner failed (%s); following the plan", ctx.run_id, node_id, e
        )
        follow = path[-1]["planned"][:1]
        return not follow, [(step, None) for step in follow]


def complete_accepted(task: str, path: Sequence[NodeRecord]) -> bool:
    """Whether a replanner's "complete" may end `path`. A small model's word is not taken
    while planned steps remain and the task names entities (agents/grounding/verify.py:
    `question_entities`): the path ends only when every one of them occurs in its evidence.
    With no step left, or no entity to look for, the replanner decides; so it does in a run
    without tools (the caller checks), where no evidence can ever back an entity."""
    if not path[-1]["planned"] or not question_entities(task):
        return True
    return path_complete_supported(task, path_evidence_ledger(path), None)


async def expand(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> ExpandOutcome:
    """What follows `node_id`. A path at `max_depth` is complete without asking the replanner.
    Proposals that repeat a step of the path or of an existing sibling are dropped; none are
    invented to fill the quota."""
    started = time.monotonic()
    outcome = await _expand(ctx, nodes, node_id)
    outcome.seconds = round(time.monotonic() - started, 4)
    return outcome


async def _expand(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> ExpandOutcome:
    path = path_to(nodes, node_id)
    params = ctx.params
    if len(path) >= params.max_depth:
        outcome = ExpandOutcome(complete=True, steps=[], dropped=[])
    else:
        outcome = await _proposals(ctx, nodes, path, node_id)
    # The evaluator is asked after the replanner, and only where its judgement can change
    # what the search does (agents/nodes/evaluator.py).
    scores = outcome.scores or [None] * len(outcome.steps)
    live = [j for j in scores if prune_reason(j, params.min_score) is None]
    if progress_wanted(params, live):
        outcome.progress = await _judge_progress(ctx, path, node_id)
    return outcome


async def _proposals(
    ctx: RunContext, nodes: Mapping[str, NodeRecord], path: list[NodeRecord], node_id: str
) -> ExpandOutcome:
    params = ctx.params
    complete, proposals = await _replan(ctx, path, node_id)
    if complete and ctx.tools and not complete_accepted(ctx.task, ctx.shown(path)):
        logger.info(
            "run=%s node=%s the replanner says complete, but the evidence does not name every "
            "entity of the task: the next planned step runs",
            ctx.run_id,
            node_id,
        )
        complete, proposals = False, [(path[-1]["planned"][0], None)]
    if complete and (params.max_paths == 1 or is_anytime(params)):
        return ExpandOutcome(complete=True, steps=[], dropped=[s for s, _ in proposals])
    # A complete path keeps the steps proposed beside "complete" as checks: children of its
    # last node, run when the search has budget for more paths (its answer is written anyway).
    # One path wanted, or none proposed, and the path simply ends.
    taken = [n["step"] for n in path] + [c["step"] for c in children_of(nodes, node_id)]
    kept, dropped = pick_candidates(proposals, taken=taken, limit=expansion_width(params))
    # With evaluate=false the replanner's judgements are not used at all (no priors, no pruning).
    scores = [judged if params.evaluate else None for _, judged in kept]
    ctx.accountant.candidates_scored += sum(1 for s in scores if s is not None)
    return ExpandOutcome(
        complete=complete or not kept,
        steps=[step for step, _ in kept],
        dropped=dropped,
        scores=scores,
    )


async def _judge_progress(ctx: RunContext, path: list[NodeRecord], node_id: str) -> Judged | None:
    """The progress judgement, or None. A budget refusal of the evaluator only costs the
    judgement (the replanner's proposal is still used); other failures propagate."""
    try:
        judged = await score_progress(ctx, path, node_id)
    except BudgetExhausted as e:
        logger.info("run=%s node=%s progress not judged: %s", ctx.run_id, node_id, e)
        return None
    if judged is None:
        return None
    return Judged(score=judged.score, viable=True, reason=judged.reason)


async def branch(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> ExpandOutcome:
    """Alternatives to the step at `node_id` (anytime search): the replanner, shown the path
    before it and why the first answer looks weak, proposes steps that retrieve differently.
    They become the node's siblings (`TreeFold.branched`); repeats of the path's steps, of
    the node's own or of its siblings' are dropped. The call samples (its own seed) even on
    the first path: it exists to bring something the greedy path did not."""
    started = time.monotonic()
    node = nodes[node_id]
    before = path_to(nodes, node["parent_id"]) if node["parent_id"] else []
    leaf = first_answered(nodes)
    reasons = assess(ctx.task, nodes, leaf).reasons() if leaf is not None else []
    room = siblings_room(nodes, node_id, ctx.params)
    tracker = ctx.tracker("replanner", node_id)
    try:
        _, proposals = await call_structured(
            ctx.model("replanner"),
            replan_schema(),
            alternatives_messages(
                ctx.task,
                ctx.shown(before),
                node["step"],
                reasons,
                room,
                ctx.settings.result_max_chars,
            ),
            config=ctx.config(tracker, node_id=node_id, salt="alternatives"),
            parse=read_replan,
            what="replanner",
        )
    except ModelError as e:
        logger.warning("run=%s node=%s no alternatives: %s", ctx.run_id, node_id, e)
        proposals = []
    taken = [n["step"] for n in before] + [n["step"] for n in siblings_of(nodes, node_id)]
    kept, dropped = pick_candidates(proposals, taken=taken, limit=room)
    scores = [judged if ctx.params.evaluate else None for _, judged in kept]
    ctx.accountant.candidates_scored += sum(1 for s in scores if s is not None)
    return ExpandOutcome(
        complete=False,
        steps=[step for step, _ in kept],
        dropped=dropped,
        scores=scores,
        seconds=round(time.monotonic() - started, 4),
    )
