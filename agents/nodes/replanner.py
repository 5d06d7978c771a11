"""Replanner job: after a step, either end the path or propose distinct next steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from agents.context import RunContext
from agents.jobs import ExpandOutcome
from agents.prompts import replanner_messages
from agents.state import NodeRecord
from agents.structured import call_structured
from agents.tree import children_of, path_to, select_candidates


class Replan(BaseModel):
    """The replanner's structured output."""

    complete: bool = Field(description="True when the results so far suffice to answer the task.")
    next_steps: list[str] = Field(
        default_factory=list,
        description="Alternative next steps, best first; empty when complete.",
    )


async def expand(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> ExpandOutcome:
    """Ask the replanner what follows `node_id`; de-duplicate and bound its proposals.

    A path at `max_depth` is complete without asking. Proposals that repeat a step of the path
    or of an existing sibling are dropped; none are invented to fill the quota.
    """
    path = path_to(nodes, node_id)
    params = ctx.params
    if len(path) >= params.max_depth:
        return ExpandOutcome(complete=True, steps=[], dropped=[])
    tracker = ctx.tracker("replanner", node_id)

    def parse(out: Any) -> Replan:
        return Replan.model_validate(out)

    replan = await call_structured(
        ctx.models.for_role("replanner"),
        Replan,
        replanner_messages(ctx.task, path, params.max_candidates, ctx.settings.result_max_chars),
        config=ctx.config(tracker, node_id=node_id),
        parse=parse,
        what="replanner",
        retries=ctx.settings.model_max_retries,
        retry_delay_s=ctx.settings.model_retry_base_delay_s,
    )
    if replan.complete:
        return ExpandOutcome(complete=True, steps=[], dropped=list(replan.next_steps))
    taken = [n["step"] for n in path] + [c["step"] for c in children_of(nodes, node_id)]
    steps, dropped = select_candidates(replan.next_steps, taken=taken, limit=params.max_candidates)
    return ExpandOutcome(complete=not steps, steps=steps, dropped=dropped)
