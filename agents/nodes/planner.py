"""Planner node: the task becomes a plan; its first step seeds the root of the tree."""

from __future__ import annotations

import logging
import time
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from agents.context import RunContext
from agents.errors import PlanFailed
from agents.events import NodeBrief, PlanMade
from agents.prompts import planner_messages
from agents.recall import known_summary
from agents.state import RunState, new_node
from agents.tree import clean_step, usable_step
from calls.errors import BudgetExhausted, ModelError
from calls.structured import call_structured

logger = logging.getLogger(__name__)


class Plan(BaseModel):
    """The planner's structured output."""

    steps: list[str] = Field(
        min_length=1, description="Concrete research steps, in the order to do them."
    )


def _usable_steps(plan: Any, max_steps: int) -> list[str]:
    steps = [clean_step(s) for s in Plan.model_validate(plan).steps]
    steps = [s for s in steps if usable_step(s)]
    if not steps:
        raise ValueError("the plan has no steps; give at least one")
    if len(steps) > max_steps:
        logger.info("plan of %d steps cut to %d", len(steps), max_steps)
    return steps[:max_steps]


def _known(state: RunState) -> str | None:
    known = state.get("known")
    return known_summary(known) if known else None


async def plan(state: RunState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Make the plan and the root node. A plan that is empty or unparseable twice fails the run
    (`PlanFailed`), as does a budget too small for a plan (`BudgetExhausted`)."""
    ctx = runtime.context
    params = ctx.params
    tracker = ctx.tracker("planner", None)
    started = time.monotonic()
    try:
        steps = await call_structured(
            ctx.model("planner"),
            Plan,
            planner_messages(state["task"], params.max_plan_steps, _known(state)),
            config=ctx.config(tracker),
            parse=lambda out: _usable_steps(out, params.max_plan_steps),
            what="planner",
        )
    except BudgetExhausted as e:
        raise BudgetExhausted(e.reason, "the budget ran out before a plan was made") from e
    except ModelError as e:
        logger.warning("run=%s planning failed: %s", ctx.run_id, e)
        raise PlanFailed("the planner produced no usable plan") from e
    root = new_node(parent=None, index=1, step=steps[0], planned=steps[1:])
    await ctx.emit(
        PlanMade(
            run_id=ctx.run_id,
            steps=steps,
            root=NodeBrief(node_id=root["id"], parent_id=None, depth=0, step=root["step"]),
            seconds=round(time.monotonic() - started, 4),
        )
    )
    logger.info("run=%s plan of %d steps", ctx.run_id, len(steps))
    return {
        "plan": steps,
        "nodes": {root["id"]: root},
        "phase": "review" if params.approve_plan else "search",
        "metrics": ctx.accountant.snapshot(),
    }
