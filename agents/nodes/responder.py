"""Responder job: a complete path's steps and results become its candidate answer."""

from __future__ import annotations

import time
from collections.abc import Mapping

from agents.context import RunContext
from agents.jobs import RespondOutcome
from agents.prompts import responder_messages
from agents.state import NodeRecord
from agents.tree import path_to
from calls.errors import BudgetExhausted


async def write_answer(
    ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str, *, partial: bool = False
) -> str:
    """The answer text for the path ending at `node_id` (raises on model failure)."""
    path = path_to(nodes, node_id)
    tracker = ctx.tracker("responder", node_id)
    model = ctx.model("responder")
    messages = responder_messages(ctx.task, path, ctx.settings.result_max_chars, partial=partial)
    reply = await model.ainvoke(messages, config=ctx.config(tracker, node_id=node_id))
    return reply.text.strip()


async def respond(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> RespondOutcome:
    """Write the candidate answer of a complete path; a failure leaves the path without one."""
    started = time.monotonic()

    def outcome(answer: str | None, error: str | None) -> RespondOutcome:
        return RespondOutcome(answer, error, round(time.monotonic() - started, 4))

    try:
        answer = await write_answer(ctx, nodes, node_id)
    except BudgetExhausted:
        raise
    except Exception as e:
        return outcome(None, f"responder failed ({type(e).__name__})")
    if not answer:
        return outcome(None, "responder returned an empty answer")
    return outcome(answer, None)
