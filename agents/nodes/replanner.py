"""Expansion job: judge the path's progress, then end it or propose distinct next steps, and
judge those candidates in one call."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from agents.context import RunContext
from agents.errors import ModelError
from agents.jobs import ExpandOutcome, Judged
from agents.nodes.evaluator import score_candidates, score_progress
from agents.prompts import replanner_messages
from agents.state import NodeRecord
from agents.structured import call_structured
from agents.tree import children_of, path_to, select_candidates

logger = logging.getLogger(__name__)


class Replan(BaseModel):
    """The replanner's structured output."""

    complete: bool = Field(description="True when the results so far suffice to answer the task.")
    next_steps: list[str] = Field(
        default_factory=list,
        description="Alternative next steps, best first; empty when complete.",
    )


async def _replan(ctx: RunContext, path: list[NodeRecord], node_id: str) -> Replan:
    tracker = ctx.tracker("replanner", node_id)

    def parse(out: Any) -> Replan:
        return Replan.model_validate(out)

    try:
        return await call_structured(
            ctx.model("replanner"),
            Replan,
            replanner_messages(
                ctx.task, path, ctx.params.max_candidates, ctx.settings.result_max_chars
            ),
            config=ctx.config(tracker, node_id=node_id),
            parse=parse,
            what="replanner",
        )
    except ModelError as e:
        # Follow the plan rather than lose the path.
        logger.warning(
            "run=%s node=%s replanner failed (%s); following the plan", ctx.run_id, node_id, e
        )
        follow = path[-1]["planned"][:1]
        return Replan(complete=not follow, next_steps=follow)


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
    progress: Judged | None = None
    if params.evaluate:
        judged = await score_progress(ctx, path, node_id)
        if judged is not None:
            progress = Judged(score=judged.score, viable=True, reason=judged.reason)
    if len(path) >= params.max_depth:
        return ExpandOutcome(complete=True, steps=[], dropped=[], progress=progress)
    replan = await _replan(ctx, path, node_id)
    if replan.complete:
        return ExpandOutcome(
            complete=True, steps=[], dropped=list(replan.next_steps), progress=progress
        )
    taken = [n["step"] for n in path] + [c["step"] for c in children_of(nodes, node_id)]
    steps, dropped = select_candidates(replan.next_steps, taken=taken, limit=params.max_candidates)
    scores: list[Judged | None] = [None] * len(steps)
    if params.evaluate and steps:
        scores = [
            Judged(score=s.score, viable=s.viable, reason=s.reason) if s else None
            for s in await score_candidates(ctx, path, steps, node_id)
        ]
    return ExpandOutcome(
        complete=not steps, steps=steps, dropped=dropped, progress=progress, scores=scores
    )
