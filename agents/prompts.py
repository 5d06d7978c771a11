"""Every prompt the engine sends, in one place. Functions return message lists."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agents.fencing import FENCE_RULE, fence
from agents.grounding.evidence import Evidence, path_ledger, render_evidence
from agents.state import NodeRecord
from agents.tree import TRIM_MARK, trim

# Every system prompt ends with FENCE_RULE; every text a tool, a fetched page or a model's
# findings put in a prompt is inside a `fence`.

PLANNER_SYSTEM = (
    "You plan research. Break the user's task into a short sequence of concrete steps, each one "
    "something a researcher with web search, arXiv and Wikipedia can do and report on. Do not "
    "answer the task yourself. Use at most {max_steps} steps; fewer is better when enough. "
    + FENCE_RULE
)

EXECUTOR_SYSTEM = (
    "You are a careful researcher carrying out ONE step of a larger plan. Use the tools when the "
    "step needs facts you are not sure of; prefer primary sources. When done, reply with the "
    "step's findings in a few short paragraphs, naming the sources (title and URL) you relied on. "
    "If a tool fails, try another query or tool, or say what could not be found. " + FENCE_RULE
)

REPLANNER_SYSTEM = (
    "You steer a tree search over research plans. Given the task and the steps done so far on "
    "this path with their results, decide whether the results already suffice to answer the "
    "task. If they do, set complete=true; you may still propose up to {k} steps that would "
    "check the answer against another source or fill a gap (the search runs them only if it "
    "has budget for more paths). Otherwise propose up to {k} alternative NEXT steps (distinct "
    "approaches, best first); the next planned step, if any, is a natural candidate. Never "
    "repeat a step already done on this path. Judge each "
    "candidate as you propose it: a score in [0, 1] for how much doing it next would advance "
    "answering the task (1: decisive, 0: useless), viable=false when it is off topic, not "
    "feasible with web search, arXiv and Wikipedia, or a repeat, and a one-line reason. "
    + FENCE_RULE
)

REPLANNER_ALTERNATIVES_SYSTEM = (
    "You steer a research search. One path answered the task, but its answer looks weak (the "
    "reasons are given). Propose up to {k} alternative steps to take INSTEAD of the step named "
    "below, each one retrieving differently: another search query with other key terms, "
    "another entity or source to look up, the same fact approached from the other side. Not "
    "a rewording of the step, and never a step already done on this path. Judge each: a score "
    "in [0, 1] for how likely it finds what the path lacks, viable=false for a repeat or an "
    "off-topic step, and a one-line reason. Leave complete=false. " + FENCE_RULE
)

RESPONDER_SYSTEM = (
    "Write the final answer to the task from the research and the evidence below. Be direct "
    "and specific, and say where the evidence is thin. Back each claim with a citation: put a "
    "marker [1], [2], ... right after the sentence it supports, and for each marker give the id "
    "of the evidence item it rests on (E1, E2, ...) and a short quote copied word for word from "
    "that item's text. Quote only what the item says; a claim no item supports gets no marker. "
    + FENCE_RULE
)

VOTER_SYSTEM = (
    "Several research paths produced candidate answers to the same task. Pick the candidate "
    "that answers the task most correctly and completely, with the best support from its "
    "evidence. Reply with the candidate's id. " + FENCE_RULE
)


# Every role that reads a path shows it the same way, after the task: "Task: ...", this
# heading, then `_path_block`. A local model whose prompts open with that text (its
# instructions last, `calls.local_grammar.chat_messages`) reuses one call's KV state in the next
# call on the path, whatever the two calls' roles.
PATH_HEADING = "Steps done on this path:"


def _path_block(path: Sequence[NodeRecord], result_chars: int, *, fenced: bool = True) -> str:
    """Each step and its result; a result is fenced unless the whole block will be."""
    if not path:
        return "(nothing done yet)"
    lines = []
    for index, node in enumerate(path, start=1):
        outcome = node["result"] if node["status"] == "done" else f"(failed: {node['error']})"
        result = trim(outcome or "", result_chars)
        shown = f"\n{fence(result)}" if fenced else f" {result}"
        lines.append(f"Step {index}: {node['step']}\nResult {index}:{shown}")
    return "\n\n".join(lines)


def planner_messages(task: str, max_steps: int, known: str | None = None) -> list[BaseMessage]:
    """The planner's prompt; `known` is what earlier runs on the run's thread found."""
    body = f"Task: {task}"
    if known:
        body += (
            "\n\nAlready known from earlier questions on this thread (plan steps only for "
            f"what it does not settle; their evidence is at hand):\n{fence(known)}"
        )
    return [
        SystemMessage(content=PLANNER_SYSTEM.format(max_steps=max_steps)),
        HumanMessage(content=body),
    ]


def path_evidence_ledger(path: Sequence[NodeRecord]) -> dict[str, Evidence]:
    """The evidence the path's steps found, numbered E1, E2, ... as its prompts show it."""
    return path_ledger(item for node in path for item in node["evidence"])


def shown_evidence(ledger: dict[str, Evidence], max_chars: int) -> dict[str, Evidence]:
    """The items as a prompt shows them: each text cut so that all of them fit in about
    `max_chars` (with its sentences cut to match)."""
    if not ledger:
        return {}
    share = max(200, max_chars // len(ledger))
    shown: dict[str, Evidence] = {}
    for evidence_id, item in ledger.items():
        text = trim(item["text"], share)
        whole = len(text) == len(item["text"])
        shown[evidence_id] = Evidence(
            id=item["id"],
            node_id=item["node_id"],
            tool=item["tool"],
            source=item["source"],
            text=text,
            sentences=item["sentences"]
            if whole
            else [s for s in item["sentences"] if s["end"] <= len(text) - len(TRIM_MARK)],
        )
    return shown


def responder_evidence_chars(result_chars: int) -> int:
    """How much evidence text the responder is shown in all."""
    return 2 * result_chars


def _evidence_block(ledger: dict[str, Evidence], max_chars: int) -> str:
    """The items fenced whole, each cut so that all of them fit in about `max_chars`."""
    if not ledger:
        return "(none)"
    return fence(render_evidence(shown_evidence(ledger, max_chars).values()))


def executor_messages(
    task: str, done: Sequence[NodeRecord], step: str, planned: Sequence[str], result_chars: int
) -> list[BaseMessage]:
    """The executor sees the task, every ancestor's step and result (root included) and the
    evidence they found, its own step, and the steps still planned after it."""
    later = "\n".join(f"- {s}" for s in planned) or "(none)"
    evidence = path_evidence_ledger(done)
    found = (
        f"Evidence found so far (search again only for what it lacks):\n"
        f"{_evidence_block(evidence, result_chars)}\n\n"
        if evidence
        else ""
    )
    body = (
        f"Task: {task}\n\n"
        f"{PATH_HEADING}\n{_path_block(done, result_chars)}\n\n"
        f"{found}"
        f"Step to execute: {step}\n\n"
        f"Planned after this step (do not do them now):\n{later}"
    )
    return [HumanMessage(content=body)]


def replanner_messages(
    task: str, path: Sequence[NodeRecord], k: int, result_chars: int
) -> list[BaseMessage]:
    planned = "\n".join(f"- {s}" for s in path[-1]["planned"]) or "(none)"
    body = (
        f"Task: {task}\n\n"
        f"{PATH_HEADING}\n{_path_block(path, result_chars)}\n\n"
        f"Remaining plan:\n{planned}"
    )
    return [SystemMessage(content=REPLANNER_SYSTEM.format(k=k)), HumanMessage(content=body)]


def alternatives_messages(
    task: str,
    before: Sequence[NodeRecord],
    step: str,
    reasons: Sequence[str],
    k: int,
    result_chars: int,
) -> list[BaseMessage]:
    """Ask for up to `k` alternatives to `step`, the path's steps `before` it shown done."""
    done = _path_block(before, result_chars) if before else "(none: the step was the first)"
    weak = "\n".join(f"- {r}" for r in reasons) or "- (no signal named)"
    body = (
        f"Task: {task}\n\n{PATH_HEADING}\n{done}\n\n"
        f"Step to replace: {step}\n\nWhy the answer looks weak:\n{weak}"
    )
    return [
        SystemMessage(content=REPLANNER_ALTERNATIVES_SYSTEM.format(k=k)),
        HumanMessage(content=body),
    ]


def responder_messages(
    task: str,
    path: Sequence[NodeRecord],
    ledger: dict[str, Evidence],
    result_chars: int,
    *,
    partial: bool,
) -> list[BaseMessage]:
    """The path's steps and results, and its evidence numbered as `ledger` numbers it (the ids
    the answer's citations must name)."""
    note = (
        "\n\nThe research stopped before it was complete: answer as well as the evidence allows "
        "and say what is missing."
        if partial
        else ""
    )
    body = (
        f"Task: {task}\n\n{PATH_HEADING}\n{_path_block(path, result_chars)}\n\n"
        f"Evidence:\n{_evidence_block(ledger, responder_evidence_chars(result_chars))}{note}"
    )
    return [SystemMessage(content=RESPONDER_SYSTEM), HumanMessage(content=body)]


def voter_messages(
    task: str, candidates: Sequence[tuple[str, str, str]], evidence_chars: int
) -> list[BaseMessage]:
    """`candidates` holds (id, answer, evidence) triples, already in the order to show; each
    answer and each evidence block is fenced whole."""
    blocks = [
        f"### Candidate {cid}\nAnswer:\n{fence(trim(answer, evidence_chars))}\n\n"
        f"Evidence:\n{fence(trim(evidence, evidence_chars))}"
        for cid, answer, evidence in candidates
    ]
    body = f"Task: {task}\n\n" + "\n\n".join(blocks)
    return [SystemMessage(content=VOTER_SYSTEM), HumanMessage(content=body)]


def path_evidence(path: Sequence[NodeRecord], result_chars: int, value: float | None = None) -> str:
    """A path's steps and results as one text block, unfenced (the vote fences it whole; a
    best-effort answer shows it to the user), headed by the path's value in the search when it
    has one."""
    head = (
        "Value of this candidate (0 to 1, from the scores of its steps and its "
        f"groundedness): {value:.2f}\n\n"
        if value is not None
        else ""
    )
    return head + _path_block(path, result_chars, fenced=False)


EVALUATOR_PROGRESS_SYSTEM = (
    "You judge research progress. Given the task and the steps done on one path with their "
    "results, give a score in [0, 1] for how close these results are to a correct, complete "
    "answer (1: the task can be answered well from them), and a one-line reason. " + FENCE_RULE
)


def progress_messages(
    task: str, path: Sequence[NodeRecord], result_chars: int
) -> list[BaseMessage]:
    body = f"Task: {task}\n\n{PATH_HEADING}\n{_path_block(path, result_chars)}"
    return [SystemMessage(content=EVALUATOR_PROGRESS_SYSTEM), HumanMessage(content=body)]
