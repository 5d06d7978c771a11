"""What a run on a thread knows from the earlier runs of that thread: their questions, answers,
citations and evidence, retrieved by relevance to the new task and bounded, as plain data the
checkpointer saves with the run's state.

A recollection reaches the search as one extra step shown before every path (`known_node`):
its evidence is the recalled passages, so the executor sees them as found already (and
searches only for what they lack), the responder can cite them and the verifier checks those
quotes against the same text. The planner is told what is known (`known_summary`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from typing_extensions import TypedDict

from agents.grounding.evidence import Evidence, relabelled
from agents.state import NodeRecord, Recollection, Turn, new_node
from agents.tree import trim

KNOWN_NODE_ID = "n0"
"""The id of the step that stands for a thread's earlier runs: before every root (`n1`)."""
KNOWN_STEP = "Recall what earlier runs on this thread found"
MAX_RECALLED_ITEMS = 12
MAX_RECALLED_TURNS = 4
ANSWER_CHARS = 1200

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words too common to say anything about relevance.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
    ]
)


class EarlierRun(TypedDict):
    """One finished run of the thread as the recollection reads it."""

    run_id: str
    question: str
    answer: str
    cited: list[str]  # the quotes of its answer's verified citations
    evidence: list[Evidence]


def _terms(text: str) -> set[str]:
    return {w for w in (m.casefold() for m in _WORD.findall(text)) if w not in _STOP}


def relevance(query: set[str], text: str) -> float:
    """The share of the query's terms that occur in `text` (0 with no query term)."""
    if not query:
        return 0.0
    return len(query & _terms(text)) / len(query)


def recall(
    task: str,
    earlier: Sequence[EarlierRun],
    *,
    max_items: int = MAX_RECALLED_ITEMS,
    max_turns: int = MAX_RECALLED_TURNS,
) -> Recollection | None:
    """The recollection for `task` from `earlier` (oldest first): the last `max_turns` turns,
    and at most `max_items` evidence items ranked by their relevance to the task and the
    earlier questions, a passage an answer cited first among equals; None when there is
    nothing to recall. Items keep their text; their ids are made unique across runs."""
    if not earlier:
        return None
    query = _terms(task)
    context = set().union(*(_terms(run["question"]) for run in earlier))
    ranked: list[tuple[float, int, Evidence]] = []
    seen: set[tuple[str, str]] = set()
    order = 0
    for run in reversed(earlier):  # the newest run's copy of a passage is kept
        quotes = run["cited"]
        for item in run["evidence"]:
            key = (item["source"]["id"], item["text"])
            if key in seen:
                continue
            seen.add(key)
            score = (
                2 * relevance(query, item["text"] + " " + item["source"]["title"])
                + relevance(context, item["text"])
                + (1.0 if any(quote in item["text"] for quote in quotes) else 0.0)
            )
            ranked.append((score, order, _recalled(run["run_id"], item)))
            order += 1
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    turns = [
        Turn(
            run_id=run["run_id"], question=run["question"], answer=trim(run["answer"], ANSWER_CHARS)
        )
        for run in earlier[-max_turns:]
    ]
    return Recollection(turns=turns, evidence=[item for _, _, item in ranked[:max_items]])


def _recalled(run_id: str, item: Evidence) -> Evidence:
    return relabelled(item, f"{run_id}/{item['id']}", KNOWN_NODE_ID)


def known_summary(recollection: Recollection) -> str:
    """The earlier turns as one text: each question and its answer."""
    return "\n\n".join(
        f"Earlier question: {turn['question']}\nIts answer: {turn['answer']}"
        for turn in recollection["turns"]
    )


def known_node(recollection: Recollection) -> NodeRecord:
    """The done step that stands for the earlier runs: their answers as its result, the
    recalled passages as its evidence. Shown before a path, never part of the tree."""
    node = new_node(parent=None, index=0, step=KNOWN_STEP, planned=[])
    return NodeRecord(
        **{
            **node,
            "status": "done",
            "result": known_summary(recollection),
            "evidence": list(recollection["evidence"]),
            "expanded": True,
        }
    )


def shown_path(recollection: Recollection | None, path: Iterable[NodeRecord]) -> list[NodeRecord]:
    """`path` as a prompt shows it: after the known step when the run has a recollection."""
    return [known_node(recollection), *path] if recollection else list(path)
