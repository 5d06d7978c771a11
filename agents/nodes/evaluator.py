"""Evaluator: judges a path's progress after its last step, in one call, where that judgement
can change what the search does (`progress_wanted`). Candidates are judged by the replanner
itself, in its proposal; an expansion whose live candidates carry scores is observed through
them (the best one is backed up, see agents/nodes/fold.py), so no second call is bought to say
what the replanner has said."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agents.context import RunContext
from agents.jobs import Judged
from agents.params import RunParams
from agents.prompts import progress_messages
from agents.state import NodeRecord
from calls.errors import ModelError
from calls.structured import call_structured

logger = logging.getLogger(__name__)


class Progress(BaseModel):
    """The evaluator's judgement of a path so far."""

    score: float = Field(ge=0, le=1, description="How close the results are to an answer.")
    reason: str = Field(default="", description="One line.")


def judges_ends(params: RunParams) -> bool:
    """Whether a path that ends is judged: only when a stop rule reads the judgement (early
    stop on `satisfaction`). Otherwise a finished path's answer goes to the vote, which reads
    the evidence itself, and its value is its candidate score."""
    return params.evaluate and params.satisfaction is not None


def progress_wanted(params: RunParams, live: Sequence[Judged | None]) -> bool:
    """Whether the progress call is worth making after an expansion whose surviving (not
    pruned) continuations carry the judgements `live`.

    - The path ends (nothing live): only if a stop rule reads the judgement (`judges_ends`).
    - Some continuation is scored: no. The node's value is its best child's (`node_value`), so
      a progress score would never enter it, and the best live score is the expansion's
      observation (backed up as one visit).
    - Only unscored continuations (the replanner failed, or gave no scores): yes, the
      judgement is the only observation of this expansion.
    """
    if not params.evaluate:
        return False
    if not live:
        return judges_ends(params)
    return all(judged is None for judged in live)


async def score_progress(
    ctx: RunContext, path: Sequence[NodeRecord], node_id: str
) -> Progress | None:
    """Judge how close the path ending at `node_id` is to an answer; None on failure."""
    tracker = ctx.tracker("evaluator", node_id)
    try:
        return await call_structured(
            ctx.model("evaluator"),
            Progress,
            progress_messages(ctx.task, ctx.shown(path), ctx.settings.result_max_chars),
            config=ctx.config(tracker, node_id=node_id),
            parse=Progress.model_validate,
            what="evaluator",
        )
    except ModelError as e:
        logger.warning("run=%s node=%s progress unscored: %s", ctx.run_id, node_id, e)
        return None
