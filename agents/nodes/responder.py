"""Responder job: a complete path's steps, results and evidence become its candidate answer,
with citations checked by the verifier (agents/grounding/verify.py) before anyone reads them."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from pydantic import ValidationError

from agents.context import RunContext
from agents.grounding.choices import cited_answer_schema, quote_choices
from agents.grounding.salvage import salvaged
from agents.grounding.verify import CitedAnswer, Grounding, grounding_of, verify_answer
from agents.jobs import RespondOutcome
from agents.prompts import (
    path_evidence_ledger,
    responder_evidence_chars,
    responder_messages,
    shown_evidence,
)
from agents.state import NodeRecord
from agents.tree import path_to
from calls.errors import BudgetExhausted
from calls.local_confidence import confidence_in
from calls.structured import structured

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Answer:
    """A path's answer as the verifier left it: rejected markers removed, and what held;
    `confidence`, the mean log-probability the model gave the tokens of its reply, from a model
    that reports it (the local one: calls/local_confidence.py), else None."""

    text: str
    grounding: Grounding
    confidence: float | None = None


async def write_answer(
    ctx: RunContext,
    nodes: Mapping[str, NodeRecord],
    node_id: str,
    *,
    partial: bool = False,
    salt: str = "",
    temperature: float | None = None,
) -> Answer:
    """The answer for the path ending at `node_id`, its citations verified (raises on model
    failure). A `salt` names another, sampled reading of the same path (its own seed, at
    `temperature` where given: the call decodes as `RunContext.decoding` says); without one
    the call decodes as the node's.

    The responder replies with a `CitedAnswer`. A reply cut short by the token limit keeps
    its answer and its whole citations (`agents/grounding/salvage.py`). A reply that is not
    one at all (a model that answers in prose) is taken as an answer without citations: it is
    kept, and every sentence of it is unsupported, rather than asked for again.
    """
    path = ctx.shown(path_to(nodes, node_id))
    ledger = path_evidence_ledger(path)
    tracker = ctx.tracker("responder", node_id)
    result_chars = ctx.settings.result_max_chars
    messages = responder_messages(ctx.task, path, ledger, result_chars, partial=partial)
    schema: type[CitedAnswer] | dict[str, Any] = CitedAnswer
    if ctx.settings.quote_choices:
        shown = shown_evidence(ledger, responder_evidence_chars(result_chars))
        choices = quote_choices(ledger, shown)
        if choices:
            schema = cited_answer_schema(choices)
    out = await structured(ctx.model("responder"), schema).ainvoke(
        messages, config=ctx.config(tracker, node_id=node_id, salt=salt, temperature=temperature)
    )
    raw = out.get("raw") if isinstance(out, dict) else None
    reply = raw if isinstance(raw, AIMessage) else None
    cited = _cited(out.get("parsed") if isinstance(out, dict) else None)
    if cited is None:
        text = reply.text if reply is not None else ""
        cited = salvaged(text) or CitedAnswer(answer=text, citations=[])
    verified = verify_answer(cited, ledger)
    answer = verified["answer"].strip()
    found = confidence_in(reply.response_metadata if reply is not None else None)
    if found is None:
        return Answer(answer, grounding_of(verified))
    logger.debug(
        "run=%s node=%s answer's mean token log-probability %.4f over %d tokens (min %.4f)",
        ctx.run_id,
        node_id,
        found.mean_logprob,
        found.tokens,
        found.min_logprob,
    )
    return Answer(answer, grounding_of(verified), round(found.mean_logprob, 4))


def _cited(parsed: object) -> CitedAnswer | None:
    """The reply as a `CitedAnswer` (a schema given as JSON parses to a dict), or None."""
    if isinstance(parsed, CitedAnswer):
        return parsed
    if isinstance(parsed, dict):
        try:
            return CitedAnswer.model_validate(parsed)
        except ValidationError:
            return None
    return None


async def respond(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> RespondOutcome:
    """Write the candidate answer of a complete path; a failure leaves the path without one."""
    started = time.monotonic()

    def outcome(answer: Answer | None, error: str | None) -> RespondOutcome:
        return RespondOutcome(
            answer.text if answer else None,
            error,
            round(time.monotonic() - started, 4),
            answer.grounding if answer else None,
            answer.confidence if answer else None,
        )

    try:
        answer = await write_answer(ctx, nodes, node_id)
    except BudgetExhausted:
        raise
    except Exception as e:
        return outcome(None, f"responder failed ({type(e).__name__})")
    if not answer.text:
        return outcome(None, "responder returned an empty answer")
    return outcome(answer, None)
