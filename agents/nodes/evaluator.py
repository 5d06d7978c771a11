"""Evaluator: judges a path's progress after its last step (one call per expansion, run beside
the replanner's call). Candidates are judged by the replanner itself, in its proposal."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agents.context import RunContext
from agents.errors import ModelError
from agents.prompts import progress_messages
from agents.state import NodeRecord
from agents.structured import call_structured

logger = logging.getLogger(__name__)


class Progress(BaseModel):
    """The evaluator's judgement of a path so far."""

    score: float = Field(ge=0, le=1, description="How close the results are to an answer.")
    reason: str = Field(default="", description="One line.")


async def score_progress(
    ctx: RunContext, path: Sequence[NodeRecord], node_id: str
) -> Progress | None:
    """Judge how close the path ending at `node_id` is to an answer; None on failure."""
    tracker = ctx.tracker("evaluator", node_id)
    try:
        return await call_structured(
            ctx.model("evaluator"),
            Progress,
            progress_messages(ctx.task, path, ctx.settings.result_max_chars),
            config=ctx.config(tracker, node_id=node_id),
            parse=Progress.model_validate,
            what="evaluator",
        )
    except ModelError as e:
        logger.warning("run=%s node=%s progress unscored: %s", ctx.run_id, node_id, e)
        return None
