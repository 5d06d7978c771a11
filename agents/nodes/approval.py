"""Plan approval node (`approve_plan`): the run stops after the planner with LangGraph's
`interrupt()`, its state checkpointed, until a caller answers with `Command(resume=...)`: the
plan as is, an edited list of steps (the root is seeded again from the first), or a rejection
(the run ends cancelled, no search call made).

LangGraph runs a node again from its start when it is resumed; nothing here has an effect
before `interrupt()` returns, so the second run is the first one's continuation.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.context import RunContext
from agents.events import NodeBrief, PlanReviewed
from agents.state import RunState, new_node
from agents.tree import clean_step

logger = logging.getLogger(__name__)
MAX_STEP_CHARS = 500


class PlanDecision(BaseModel):
    """What a caller decides about a plan waiting for approval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["approve", "edit", "reject"] = Field(
        description="approve: run the plan as is; edit: run `steps` instead; reject: end the "
        "run cancelled."
    )
    steps: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=20,
        description="The edited plan (with `edit` only), in order; each step 1-500 characters.",
    )

    @model_validator(mode="after")
    def _steps_with_edit_only(self) -> PlanDecision:
        if (self.action == "edit") != (self.steps is not None):
            raise ValueError("`steps` is given with `edit`, and only with it")
        for step in self.steps or []:
            if not clean_step(step) or len(step) > MAX_STEP_CHARS:
                raise ValueError(f"each step has 1-{MAX_STEP_CHARS} characters")
        return self


class PlanAnswer(PlanDecision):
    """A decision with who made it: the value `Command(resume=...)` carries."""

    by: str | None = Field(
        default=None, max_length=200, description="The name of the key that answered."
    )


async def approve(state: RunState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Wait for the plan's answer, then follow it (see the module docstring)."""
    ctx = runtime.context
    plan = list(state["plan"])
    raw = interrupt({"kind": "plan", "steps": plan})
    try:
        answer = PlanAnswer.model_validate(raw)
    except ValidationError:
        # The service validates answers before resuming; a bad one here is a bug upstream.
        logger.error("run=%s plan answer not valid: %r", ctx.run_id, raw)
        raise
    if answer.action == "reject":
        await ctx.emit(PlanReviewed(run_id=ctx.run_id, action="reject", steps=[], by=answer.by))
        logger.info("run=%s plan rejected by %s", ctx.run_id, answer.by or "the caller")
        return {"phase": "rejected", "stop_reason": "cancelled"}
    update: dict[str, Any] = {"phase": "search"}
    if answer.action == "edit":
        assert answer.steps is not None  # the validator's rule
        plan = [clean_step(s) for s in answer.steps][: ctx.params.max_plan_steps]
        root = new_node(parent=None, index=1, step=plan[0], planned=plan[1:])
        update |= {"plan": plan, "nodes": {root["id"]: root}}
    root_node = update["nodes"]["n1"] if "nodes" in update else state["nodes"]["n1"]
    await ctx.emit(
        PlanReviewed(
            run_id=ctx.run_id,
            action=answer.action,
            steps=plan,
            root=NodeBrief(
                node_id=root_node["id"], parent_id=None, depth=0, step=root_node["step"]
            ),
            by=answer.by,
        )
    )
    logger.info("run=%s plan %s: %d steps", ctx.run_id, answer.action, len(plan))
    return update
