"""Finish node: exactly one vote over the candidate answers, or a best-effort answer when no
path completed."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime

from agents.answer import AnswerFields, ChosenBy
from agents.anytime import first_answered, first_path, is_anytime
from agents.choice import Option, carried, may_replace, options_of, rule_rank
from agents.context import RunContext
from agents.errors import NoResult
from agents.events import VoteCast
from agents.grounding.corroborate import PathAnswer, agrees, corroborated
from agents.grounding.verify import Grounding
from agents.nodes.responder import Answer, write_answer
from agents.prompts import path_evidence, path_evidence_ledger, voter_messages
from agents.state import NodeRecord, RunState
from agents.tree import by_id, from_reserve, node_value, path_sources, path_to, trim
from calls.errors import BudgetExhausted, ModelError
from calls.structured import call_structured

logger = logging.getLogger(__name__)

VOTE_EVIDENCE_CHARS = 2500
GROUNDEDNESS_WEIGHT = 0.3
"""How much a candidate's groundedness counts in its value (the rest is its path's value)."""
VoteMethod = Literal["llm", "single", "fallback"]


def vote_schema(ids: Sequence[str]) -> dict[str, Any]:
    """JSON Schema of the vote: a string enum of candidate ids (lower-case JSON Schema types)."""
    return {
        "title": "Vote",
        "description": "The id of the best candidate answer.",
        "type": "object",
        "properties": {
            "choice": {"type": "string", "enum": list(ids), "description": "A candidate id."},
            "reason": {"type": "string", "description": "One sentence: why this candidate."},
        },
        "required": ["choice"],
    }


def groundedness(leaf: NodeRecord) -> float | None:
    """The share of the leaf's answer sentences with a verified citation, once answered."""
    return leaf["grounding"]["groundedness"] if leaf["grounding"] is not None else None


def leaf_value(leaf: NodeRecord, prior_weight: float) -> float | None:
    """A candidate's value: its leaf's `node_value` (a leaf has no children: its own
    judgements) blended with its answer's groundedness, (1 - w) * V + w * G with
    w = GROUNDEDNESS_WEIGHT; V alone before the answer is verified, G alone when nothing
    judged the path (e.g. with evaluate=false), None when neither is known."""
    grounded = groundedness(leaf)
    if leaf["score"] is None and leaf["prior"] is None:
        return grounded
    value = node_value({leaf["id"]: leaf}, leaf["id"], prior_weight)
    if grounded is None:
        return value
    return (1 - GROUNDEDNESS_WEIGHT) * value + GROUNDEDNESS_WEIGHT * grounded


def eligible(leaves: Sequence[NodeRecord], min_groundedness: float) -> list[NodeRecord]:
    """The candidates grounded at least `min_groundedness`; all of them when none is."""
    kept = [leaf for leaf in leaves if (groundedness(leaf) or 0.0) >= min_groundedness]
    return kept or list(leaves)


def best_valued(leaves: Sequence[NodeRecord], prior_weight: float) -> NodeRecord:
    """The leaf of the best-valued path; ties (and unjudged leaves) go to id order."""
    return min(leaves, key=lambda leaf: (-(leaf_value(leaf, prior_weight) or 0.0), by_id(leaf)))


def _final(
    nodes: Mapping[str, NodeRecord],
    leaf: NodeRecord,
    answer: str,
    partial: bool,
    grounding: Grounding | None,
    chosen_by: ChosenBy,
) -> AnswerFields:
    path = path_to(nodes, leaf["id"])
    return AnswerFields(
        answer=answer,
        partial=partial,
        chosen_id=leaf["id"],
        chosen_by=chosen_by,
        path=[n["id"] for n in path],
        sources=path_sources(path),
        citations=grounding["citations"] if grounding else [],
        groundedness=grounding["groundedness"] if grounding else None,
        unsupported=grounding["unsupported"] if grounding else [],
        rejected=grounding["rejected"] if grounding else [],
    )


def _vote_evidence(
    nodes: Mapping[str, NodeRecord], leaf: NodeRecord, weight: float, figures: str = ""
) -> str:
    """What the voter reads of a candidate besides its answer: `figures` (an option's
    agreement and grounding, in the anytime search), its path's value and groundedness, the
    quotes its citations were verified on, then its steps and results."""
    grounding = leaf["grounding"]
    lines: list[str] = [figures] if figures else []
    if grounding is not None:
        lines.append(
            f"Groundedness (share of the answer's sentences backed by a verified quote): "
            f"{grounding['groundedness']:.2f}"
        )
        lines += [
            f'[{c["marker"]}] "{c["quote"]}" ({c["source"]["title"]})'
            for c in grounding["citations"]
        ]
        lines.append("")
    value = leaf_value(leaf, weight)
    return "\n".join(lines) + path_evidence(
        path_to(nodes, leaf["id"]), VOTE_EVIDENCE_CHARS // 2, value
    )


async def _vote(
    ctx: RunContext,
    nodes: Mapping[str, NodeRecord],
    leaves: list[NodeRecord],
    figures: Mapping[str, str] | None = None,
) -> tuple[NodeRecord, VoteMethod, str | None]:
    """Pick a leaf: (leaf, method, reason). `figures` adds a line per leaf id to what the
    voter reads of it."""
    if len(leaves) == 1:
        return leaves[0], "single", None
    weight = ctx.params.prior_weight
    by_id = {leaf["id"]: leaf for leaf in leaves}
    shown = list(by_id)
    # No position bias, yet the same order for the same task and tree (on resume, on a rerun
    # that should be served from the cache).
    random.Random(f"{ctx.task}\n{','.join(shown)}").shuffle(shown)
    candidates = [
        (
            cid,
            by_id[cid]["answer"] or "",
            _vote_evidence(nodes, by_id[cid], weight, (figures or {}).get(cid, "")),
        )
        for cid in shown
    ]

    def parse(out: Any) -> tuple[str, str | None]:
        if not isinstance(out, dict):
            raise ValueError("expected an object with a 'choice'")
        choice = str(out.get("choice", "")).strip()
        if choice not in by_id:
            raise ValueError(f"choice must be one of {', '.join(shown)}, got {choice!r}")
        reason = out.get("reason")
        return choice, str(reason) if reason else None

    try:
        choice, reason = await call_structured(
            ctx.model("voter"),
            vote_schema(shown),
            voter_messages(ctx.task, candidates, VOTE_EVIDENCE_CHARS),
            config=ctx.config(ctx.tracker("voter", None)),
            parse=parse,
            what="voter",
        )
    except (ModelError, BudgetExhausted) as e:
        leaf = best_valued(leaves, weight)
        logger.warning("run=%s vote failed (%s); best-valued path %s", ctx.run_id, e, leaf["id"])
        return leaf, "fallback", "the vote failed; the best-valued path was taken"
    return by_id[choice], "llm", reason


async def _best_effort(ctx: RunContext, nodes: Mapping[str, NodeRecord]) -> AnswerFields | None:
    done = [n for n in nodes.values() if n["status"] == "done"]
    if not done:
        return None
    leaf = min(done, key=lambda n: (-n["depth"], by_id(n)))
    try:
        answer: Answer | None = await write_answer(ctx, nodes, leaf["id"], partial=True)
    except (ModelError, BudgetExhausted, Exception) as e:  # any failure: fall back to the text
        logger.warning("run=%s best-effort answer failed: %s", ctx.run_id, type(e).__name__)
        answer = None
    if answer is None or not answer.text:
        text = "The research stopped before a complete answer. Findings so far:\n\n" + trim(
            path_evidence(path_to(nodes, leaf["id"]), ctx.settings.result_max_chars), 8000
        )
        return _final(nodes, leaf, text, partial=True, grounding=None, chosen_by="best_effort")
    return _final(
        nodes, leaf, answer.text, partial=True, grounding=answer.grounding, chosen_by="best_effort"
    )


async def finish(state: RunState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Vote among candidate answers (once), or write a best-effort answer."""
    ctx = runtime.context
    ctx.accountant.finishing = True
    result = await _finish(ctx, state)
    # Jobs left to finish after the stop, and what their calls cost so far (they may end later;
    # the log has the final count).
    result["metrics"] = {**ctx.accountant.snapshot(), **ctx.pool.after_stop.metrics()}
    return result


async def _finish(ctx: RunContext, state: RunState) -> dict[str, Any]:
    nodes = state.get("nodes", {})
    leaves = sorted((n for n in nodes.values() if n["answer"]), key=by_id)
    if not leaves:
        final = await _best_effort(ctx, nodes)
        if final is None:
            raise NoResult("no research step succeeded")
        return {"phase": "done", "final": final.model_dump(mode="json")}
    started = time.monotonic()
    # Paths run from the reserve were judged not worth running: they corroborate an answer the
    # search found, they are not voted on (unless nothing else completed).
    revived = {n["id"] for n in leaves if from_reserve(nodes, n)}
    searched = [n for n in leaves if n["id"] not in revived] or leaves
    searched_ids = {n["id"] for n in searched}
    first = first_answered(nodes) if is_anytime(ctx.params) else None
    groups: list[list[str]] = []
    if first is not None and first["id"] in searched_ids:
        base = carried(first, [n for n in first_path(nodes) if n["id"] in searched_ids])
        options = options_of(searched, base["id"])
        groups = [[n["id"] for n in o.leaves] for o in options]
        leaf, method, reason, chosen_by, voted = await _choose(ctx, nodes, options, base)
        if leaf is base and base is not first and chosen_by == "first":
            chosen_by = "carried"
            reason = (
                f"the first path carried through its planned steps answered at {base['id']}; "
                f"{reason}"
            )
    else:
        voted = eligible(searched, ctx.params.min_groundedness)
        leaf, method, reason = await _vote(ctx, nodes, voted)
        chosen_by = _CHOSEN_BY[method]
    agreeing = [
        n
        for n in leaves
        if n["id"] != leaf["id"] and agrees(n["answer"] or "", leaf["answer"] or "")
    ]
    values = {n["id"]: leaf_value(n, ctx.params.prior_weight) for n in leaves}
    await ctx.emit(
        VoteCast(
            run_id=ctx.run_id,
            candidates=[n["id"] for n in voted],
            # Left out for groundedness (outside the anytime search, whose `options` say it).
            ineligible=[] if groups else [n["id"] for n in searched if n not in voted],
            revived=[n["id"] for n in leaves if n["id"] not in searched_ids],
            agreeing=[n["id"] for n in agreeing],
            values={k: round(v, 6) for k, v in values.items() if v is not None},
            chosen_id=leaf["id"],
            method=method,
            reason=reason,
            seconds=round(time.monotonic() - started, 4),
            chosen_by=chosen_by,
            options=groups,
        )
    )
    grounding = leaf["grounding"]
    if agreeing and grounding is not None:
        final = _corroborated(ctx, nodes, leaf, grounding, agreeing, chosen_by)
        return {"phase": "done", "final": final.model_dump(mode="json")}
    final = _final(
        nodes, leaf, leaf["answer"] or "", partial=False, grounding=grounding, chosen_by=chosen_by
    )
    return {"phase": "done", "final": final.model_dump(mode="json")}


_CHOSEN_BY: dict[VoteMethod, ChosenBy] = {"llm": "vote", "single": "single", "fallback": "fallback"}


async def _choose(
    ctx: RunContext, nodes: Mapping[str, NodeRecord], options: Sequence[Option], first: NodeRecord
) -> tuple[NodeRecord, VoteMethod, str | None, ChosenBy, list[NodeRecord]]:
    """The anytime search's choice (agents/choice.py): the first answer stays unless an
    option the rule admits wins the vote among them and it; the vote never sees an option
    the rule does not admit, and when it fails the rule's ranking decides. Also returns the
    leaves the choice was among."""
    first_option = next(o for o in options if o.has_first)
    admitted = [
        o
        for o in options
        if not o.has_first and may_replace(o, first_option, ctx.params.min_groundedness)
    ]
    if len(options) == 1 and len(first_option.leaves) == 1:
        return first, "single", None, "single", [first]
    if not admitted:
        kept = "no alternative met the choice rule: the first answer is kept"
        return first, "single", kept, "first", [first]
    by_leaf = {first["id"]: first_option, **{o.representative["id"]: o for o in admitted}}
    leaves = [first, *(o.representative for o in admitted)]
    figures = {leaf_id: option.figures() for leaf_id, option in by_leaf.items()}
    leaf, method, reason = await _vote(ctx, nodes, leaves, figures)
    if method == "fallback":
        ranked = rule_rank([first_option, *admitted])
        chosen = first if ranked.has_first else ranked.representative
        ruled = "the vote failed; the choice rule's ranking decided"
        return chosen, "fallback", ruled, "rule", leaves
    return leaf, method, reason, "vote", leaves


def _path_answer(ctx: RunContext, nodes: Mapping[str, NodeRecord], leaf: NodeRecord) -> PathAnswer:
    grounding = leaf["grounding"]
    return PathAnswer(
        answer=leaf["answer"] or "",
        citations=grounding["citations"] if grounding else [],
        ledger=path_evidence_ledger(ctx.shown(path_to(nodes, leaf["id"]))),
    )


def _corroborated(
    ctx: RunContext,
    nodes: Mapping[str, NodeRecord],
    leaf: NodeRecord,
    grounding: Grounding,
    agreeing: Sequence[NodeRecord],
    chosen_by: ChosenBy,
) -> AnswerFields:
    """The chosen answer (verified as `grounding`) with the verified quotes of the paths that
    agree with it (agents/grounding/corroborate.py); sources: the chosen path's, then those of
    the nodes whose evidence a pooled citation quotes."""
    verified, _ = corroborated(
        _path_answer(ctx, nodes, leaf), [_path_answer(ctx, nodes, n) for n in agreeing]
    )
    path = path_to(nodes, leaf["id"])
    on_path = {n["id"] for n in path}
    cited = [nodes[c["node_id"]] for c in verified["citations"] if c["node_id"] in nodes]
    final = _final(
        nodes,
        leaf,
        verified["answer"].strip(),
        partial=False,
        grounding=Grounding(
            citations=verified["citations"],
            rejected=[*grounding["rejected"], *verified["rejected"]],
            unsupported=verified["unsupported"],
            groundedness=verified["groundedness"],
        ),
        chosen_by=chosen_by,
    )
    final.sources = path_sources([*path, *(n for n in cited if n["id"] not in on_path)])
    logger.info(
        "run=%s node=%s answer corroborated by %s: %d citations (%d its own)",
        ctx.run_id,
        leaf["id"],
        ",".join(n["id"] for n in agreeing),
        len(verified["citations"]),
        len(grounding["citations"]),
    )
    return final
