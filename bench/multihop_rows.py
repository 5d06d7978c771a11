"""The multi-hop benchmark's rows: one per question, configuration and setting, with what the
answer scores and what the search did; their means; and the progress file that keeps them.

A run of a configuration in `FIRST_ROWS` gives two rows: its final answer under its own name,
and its first verified answer (its greedy first path, which is the single chain) under the
name `FIRST_ROWS` gives, with the calls, tokens and wall of the moment that answer was ready.
"""

from __future__ import annotations

import json
import logging
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict

from agents.anytime import assess, first_answered
from agents.grounding.corroborate import agrees
from agents.grounding.verify import Citation, Rejection
from agents.result import RunResult
from agents.state import Source
from agents.tree import from_reserve
from bench.multihop_candidates import Candidate, candidates_of
from bench.multihop_corpus import QuestionCorpus
from bench.multihop_data import Question
from bench.multihop_metrics import Scores, score_question, supporting_fact_scores

logger = logging.getLogger(__name__)

FIRST_ROWS: dict[str, str] = {
    "anytime": "chain@first",
    "anytime-again": "chain@first-again",
    "anytime-threads": "chain@first-threads",
}
"""Configuration -> the name of the row of its first verified answer."""
SETTING_OF_OLD_ROWS = "distractor"
"""The setting of rows written before rows named theirs (there was no other)."""

_LINK = re.compile(r"\[[^\]]*\]\([^)\s]*\)")  # [title](url), as an uncited answer may
_MARKER = re.compile(r"\s*\[\d{1,6}\]")  # a citation marker


class Grounded(Protocol):
    """An answer's grounding, as a run's result and its first answer both carry it."""

    @property
    def citations(self) -> list[Citation]: ...
    @property
    def groundedness(self) -> float | None: ...
    @property
    def rejected(self) -> list[Rejection]: ...


class FirstAnswerLike(Grounded, Protocol):
    """A run's first verified answer (`RunAnswer.first`), read without depending on it."""

    @property
    def answer(self) -> str: ...
    @property
    def path(self) -> list[str]: ...
    @property
    def metrics(self) -> dict[str, Any]: ...
    @property
    def elapsed_s(self) -> float: ...


class Row(TypedDict):
    id: str
    type: str
    config: str
    corpus: str  # the setting: `distractor` or `pooled` (bench/multihop_corpus.py)
    gold: str
    answer: str | None  # the run's answer as given
    predicted: str | None  # what is scored (`predicted_answer`)
    em: float
    f1: float
    precision: float
    recall: float
    sp_em: float
    sp_f1: float
    sp_precision: float
    sp_recall: float
    joint_f1: float
    groundedness: float | None
    citations: int
    rejected: int
    rejected_why: dict[str, int]  # the verifier's reasons, counted
    misverified: int  # verified citations whose quote the independent check does not find
    status: str
    stop_reason: str | None
    chosen_by: str | None  # how the final answer was chosen (None: not said)
    llm_calls: int
    tokens: int
    tool_calls: int
    paths: int
    wall_s: float
    gold_seen: float  # share of the gold paragraphs that any tool call of the run showed
    gold_on_path: float  # the same for the chosen path's sources
    revived: int  # answered paths run from the reserve
    agreeing: int  # other answered paths whose answer agrees with the chosen one
    nodes: int  # the tree's nodes, run or not
    branched: int  # nodes the replanner gave two or more distinct next steps
    pruned: int  # nodes cut without running (by the evaluator's score or the search)
    code: str  # the commit of the code that made the row (bench/machine.py: code_revision)
    candidates: NotRequired[list[Candidate]]  # a final row's every answered path, scored
    # The signals that found the anytime search's first answer weak (agents/anytime.py
    # `Assessment.signals`): none when it was sufficient; absent from other searches' rows.
    first_weak: NotRequired[list[str]]


class _Search(TypedDict):
    """What a row says of the search behind its answer."""

    status: str
    stop_reason: str | None
    chosen_by: str | None
    paths: int
    revived: int
    agreeing: int
    nodes: int
    branched: int
    pruned: int


def predicted_answer(answer: str | None) -> str | None:
    """What of a run's answer is scored: its first non-empty line, citation links and
    markers removed."""
    if answer is None:
        return None
    text = _MARKER.sub("", _LINK.sub("", answer))
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def supporting_fact_metrics(question: Question, predicted: Sequence[tuple[str, int]]) -> Scores:
    """Supporting-fact EM/F1 of predicted (paragraph id, sent_id) pairs against the question's
    own (the distractor setting's document ids, `CorpusDocument.doc_id`)."""
    return supporting_fact_scores(predicted, question.supporting_facts)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def misverified(corpus: QuestionCorpus, citations: Iterable[Citation]) -> int:
    """Verified citations whose quote the document they name (`corpus.texts`: each document's
    text by its id) does not hold, by a check of its own: nine in ten of the quote's words, in
    order, within the document's words."""
    wrong = 0
    for citation in citations:
        doc_id = corpus.doc_of(citation["source"]["url"])
        text = _words(corpus.texts.get(doc_id, "") if doc_id is not None else "")
        quote = _words(citation["quote"])
        found, at = 0, 0
        for word in quote:
            try:
                at = text.index(word, at) + 1
                found += 1
            except ValueError:
                continue
        if not quote or found < 0.9 * len(quote):
            wrong += 1
    return wrong


def final_row(
    question: Question,
    corpus: QuestionCorpus,
    name: str,
    result: RunResult,
    wall_s: float,
    code: str,
    task: str,
) -> Row:
    """The row of a run's final answer, its wall `wall_s` as the benchmark measured it
    (`task`, the text the run was asked)."""
    revived, agreeing = _paths_of(result)
    branched, pruned = _tree_of(result)
    search: _Search = {
        "status": result.status,
        "stop_reason": result.stop_reason,
        "chosen_by": getattr(result, "chosen_by", None),
        "paths": int(result.metrics.get("paths_completed", 0)),
        "revived": revived,
        "agreeing": agreeing,
        "nodes": len(result.nodes),
        "branched": branched,
        "pruned": pruned,
    }
    seen = [source for node in result.nodes for source in node["sources"]]
    sources = (seen, result.sources)
    row = _row(
        question, corpus, name, result.answer, result, result.metrics, wall_s, code, search, sources
    )
    row["candidates"] = candidates_of(
        result.nodes, question.answers, result.chosen_id, predicted_answer
    )
    nodes = {node["id"]: node for node in result.nodes}
    first = first_answered(nodes) if name in FIRST_ROWS else None
    if first is not None:
        row["first_weak"] = assess(task, nodes, first).signals()
    return row


def first_row(
    question: Question, corpus: QuestionCorpus, name: str, result: RunResult, code: str
) -> Row | None:
    """The row of the run's first verified answer (`result.first`), scored like any answer,
    with the calls, tokens and seconds of the moment it was ready; None for a run without
    one (or from an engine that does not give it)."""
    first: FirstAnswerLike | None = getattr(result, "first", None)
    if first is None:
        return None
    steps = set(first.path)
    # What the first path read: its steps' sources, at the moment its answer was ready.
    read = [s for node in result.nodes if node["id"] in steps for s in node["sources"]]
    search: _Search = {
        "status": "done",
        "stop_reason": None,
        "chosen_by": None,
        "paths": 1,
        "revived": 0,
        "agreeing": 0,
        "nodes": len(first.path),
        "branched": 0,
        "pruned": 0,
    }
    wall = first.elapsed_s
    return _row(
        question, corpus, name, first.answer, first, first.metrics, wall, code, search, (read, read)
    )


def _row(
    question: Question,
    corpus: QuestionCorpus,
    name: str,
    answer: str | None,
    grounding: Grounded,
    metrics: Mapping[str, Any],
    wall_s: float,
    code: str,
    search: _Search,
    sources: tuple[Iterable[Source], Iterable[Source]],
) -> Row:
    predicted = predicted_answer(answer)
    facts = corpus.facts_of(grounding.citations)
    scores = score_question(question.answers, corpus.gold_facts, predicted, facts)
    gold = corpus.gold_documents
    seen, on_path = sources
    return {
        "id": question.id,
        "type": question.type,
        "config": name,
        "corpus": corpus.setting,
        "gold": question.answer,
        "answer": answer,
        "predicted": predicted,
        "em": scores.answer.em,
        "f1": round(scores.answer.f1, 4),
        "precision": round(scores.answer.precision, 4),
        "recall": round(scores.answer.recall, 4),
        "sp_em": scores.supporting.em,
        "sp_f1": round(scores.supporting.f1, 4),
        "sp_precision": round(scores.supporting.precision, 4),
        "sp_recall": round(scores.supporting.recall, 4),
        "joint_f1": round(scores.joint.f1, 4),
        "groundedness": grounding.groundedness,
        "citations": len(grounding.citations),
        "rejected": len(grounding.rejected),
        "rejected_why": dict(Counter(r["reason"] for r in grounding.rejected)),
        "misverified": misverified(corpus, grounding.citations),
        "status": search["status"],
        "stop_reason": search["stop_reason"],
        "chosen_by": search["chosen_by"],
        "llm_calls": int(metrics.get("llm_calls", 0)),
        "tokens": tokens(metrics),
        "tool_calls": int(metrics.get("tool_calls", 0)),
        "paths": search["paths"],
        "wall_s": round(wall_s, 3),
        "gold_seen": _share(gold, _doc_ids(corpus, seen)),
        "gold_on_path": _share(gold, _doc_ids(corpus, on_path)),
        "revived": search["revived"],
        "agreeing": search["agreeing"],
        "nodes": search["nodes"],
        "branched": search["branched"],
        "pruned": search["pruned"],
        "code": code,
    }


def tokens(metrics: Mapping[str, Any]) -> int:
    """A run's tokens, in and out, from its metrics (a total where they give one)."""
    if "tokens" in metrics:
        return int(metrics["tokens"])
    return int(metrics.get("input_tokens", 0)) + int(metrics.get("output_tokens", 0))


def _doc_ids(corpus: QuestionCorpus, sources: Iterable[Source]) -> set[str]:
    """The corpus documents that `sources` cite."""
    return {doc_id for source in sources if (doc_id := corpus.doc_of(source["url"])) is not None}


def _share(gold: set[str], found: set[str]) -> float:
    return round(len(gold & found) / len(gold), 4) if gold else 0.0


def _paths_of(result: RunResult) -> tuple[int, int]:
    """How many answered paths ran from the reserve, and how many agree with the chosen one."""
    nodes = {node["id"]: node for node in result.nodes}
    leaves = [node for node in result.nodes if node["answer"]]
    chosen = nodes.get(result.chosen_id or "")
    revived = sum(1 for leaf in leaves if from_reserve(nodes, leaf))
    agreeing = sum(
        1
        for leaf in leaves
        if chosen is not None
        and leaf["id"] != chosen["id"]
        and agrees(leaf["answer"] or "", chosen["answer"] or "")
    )
    return revived, agreeing


def _tree_of(result: RunResult) -> tuple[int, int]:
    """How many nodes have two children or more, and how many nodes were pruned: where the
    search had a choice to make, and how often it cut one."""
    children = Counter(node["parent_id"] for node in result.nodes if node["parent_id"])
    branched = sum(1 for count in children.values() if count >= 2)
    pruned = sum(1 for node in result.nodes if node["status"] == "pruned")
    return branched, pruned


RowKey = tuple[str, str, str]


def row_key(row: Mapping[str, Any]) -> RowKey:
    """(question id, configuration, setting): what a row is the only one of."""
    return row["id"], row["config"], row.get("corpus", SETTING_OF_OLD_ROWS)


def done_rows(progress: Path | None) -> dict[RowKey, Row]:
    """The rows a progress file holds, by key (a later row of a key wins). A line that does
    not parse is the last write of a process killed while writing it: skipped, its run done
    again."""
    if progress is None or not progress.exists():
        return {}
    rows: dict[RowKey, Row] = {}
    for number, line in enumerate(progress.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            logger.warning(
                "multihop: %s line %s is cut short; its run is done again", progress, number
            )
            continue
        rows[row_key(row)] = row
    return rows


def append_rows(progress: Path | None, rows: Sequence[Row]) -> None:
    """Add `rows` (one run's) to the progress file in one write, on a line of their own even
    after a line a killed process left cut short."""
    if progress is None or not rows:
        return
    progress.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    with progress.open("a+b") as out:
        if out.tell() > 0:
            out.seek(-1, 2)
            if out.read(1) != b"\n":
                text = "\n" + text
        out.write(text.encode("utf-8"))


def summarise(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per configuration, means over its questions (wall: the median)."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(row["config"] for row in rows):
        mine: list[Mapping[str, Any]] = [row for row in rows if row["config"] == name]
        means = {
            key: round(statistics.fmean(float(row[key]) for row in mine), 4)
            for key in (
                "em",
                "f1",
                "sp_em",
                "sp_precision",
                "sp_recall",
                "sp_f1",
                "joint_f1",
                "llm_calls",
                "tokens",
                "tool_calls",
                "gold_seen",
                "gold_on_path",
            )
        }
        grounded = [row["groundedness"] for row in mine if row["groundedness"] is not None]
        means["groundedness"] = round(statistics.fmean(grounded), 4) if grounded else 0.0
        done = sum(1 for row in mine if row["status"] == "done")
        wall = round(statistics.median(row["wall_s"] for row in mine), 3)
        counts = {key: sum(int(row[key]) for row in mine) for key in ("citations", "misverified")}
        out[name] = {"n": len(mine), "done": done, **means, **counts, "wall_s": wall}
    return out
