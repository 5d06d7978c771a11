"""Evaluator: scores sibling candidates in one call, and a path's progress after a step."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agents.context import RunContext
from agents.errors import ModelError
from agents.prompts import candidate_scoring_messages, progress_messages
from agents.state import NodeRecord
from agents.structured import call_structured

logger = logging.getLogger(__name__)


class Score(BaseModel):
    """One judged candidate (or a path's progress when `viable` is not asked)."""

    score: float = Field(ge=0, le=1, description="0: useless, 1: decisive.")
    viable: bool = Field(default=True, description="False: do not pursue at all.")
    reason: str = Field(default="", description="One line.")


class Progress(BaseModel):
    """The evaluator's judgement of a path so far."""

    score: float = Field(ge=0, le=1, description="How close the results are to an answer.")
    reason: str = Field(default="", description="One line.")


def candidates_schema(keys: Sequence[str]) -> dict[str, Any]:
    """JSON Schema of a batch judgement: one object per candidate key."""
    entry = {
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "viable": {"type": "boolean"},
            "reason": {"type": "string"},
        },
        "required": ["score", "viable"],
    }
    return {
        "title": "CandidateScores",
        "description": "A judgement per candidate id.",
        "type": "object",
        "properties": {key: entry for key in keys},
        "required": list(keys),
    }


def read_scores(out: Any, keys: Sequence[str]) -> list[Score | None]:
    """Scores in `keys` order. A missing or malformed entry is None (unscored); extra keys are
    ignored. Raises ValueError only when the reply is not an object at all."""
    if not isinstance(out, dict):
        raise ValueError("expected an object keyed by candidate id")
    extra = sorted(set(out) - set(keys))
    if extra:
        logger.info("evaluator judged unknown ids %s; ignored", extra)
    scores: list[Score | None] = []
    for key in keys:
        try:
            scores.append(Score.model_validate(out[key]) if key in out else None)
        except ValidationError:
            scores.append(None)
    return scores


async def score_candidates(
    ctx: RunContext, path: Sequence[NodeRecord], steps: Sequence[str], node_id: str
) -> list[Score | None]:
    """Judge sibling candidates in ONE call. On failure every candidate stays unscored."""
    keys = [f"c{i}" for i in range(1, len(steps) + 1)]
    tracker = ctx.tracker("evaluator", node_id)
    try:
        scores = await call_structured(
            ctx.model("evaluator"),
            candidates_schema(keys),
            candidate_scoring_messages(
                ctx.task, path, list(zip(keys, steps, strict=True)), ctx.settings.result_max_chars
            ),
            config=ctx.config(tracker, node_id=node_id),
            parse=lambda out: read_scores(out, keys),
            what="evaluator",
        )
    except ModelError as e:
        logger.warning("run=%s node=%s candidates unscored: %s", ctx.run_id, node_id, e)
        return [None] * len(steps)
    ctx.accountant.candidate_batches += 1
    ctx.accountant.candidates_scored += len(steps)
    return scores


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
