"""The multi-hop benchmark's rows: the two rows of one anytime run (its first answer's and its
final answer's), scored alike, and the progress file that a killed run resumes from."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agents.result import RunResult
from agents.state import NodeRecord, new_node
from bench.multihop_corpus import distractor_corpus
from bench.multihop_data import Question, parse_question
from bench.multihop_rows import (
    append_rows,
    done_rows,
    final_row,
    first_row,
    row_key,
    tokens,
)
from tests.support.multihop_lines import book_line

# Book and Ann, the question's paragraphs, and one that is not.
LINE = book_line(question="Who wrote Book?")
LINE["context"].append(["Leeds", ["Leeds is a city."]])


@dataclass
class FirstAnswer:
    """A first answer as the engine reports it (`RunAnswer.first`)."""

    answer: str
    node_id: str
    path: list[str]
    metrics: dict[str, Any]
    elapsed_s: float
    citations: list[Any] = field(default_factory=list)
    groundedness: float | None = None
    unsupported: list[str] = field(default_factory=list)
    rejected: list[Any] = field(default_factory=list)


def _question() -> Question:
    return parse_question(json.dumps(LINE))


def _citation(doc_id: str, sent_id: int, quote: str, node_id: str) -> dict[str, Any]:
    url = f"corpus://{doc_id}"
    return {
        "marker": 1,
        "evidence_id": "E1",
        "source": {"id": url, "title": doc_id, "url": url},
        "quote": quote,
        "verified": True,
        "match": "exact",
        "start": 0,
        "end": len(quote),
        "node_id": node_id,
        "sent_ids": [sent_id],
    }


def _node(
    parent: NodeRecord | None, index: int, *read: str, answer: str | None = None
) -> NodeRecord:
    node = new_node(parent=parent, index=index, step=f"step {index}", planned=[])
    node["status"] = "done"
    node["sources"] = [{"title": doc, "url": f"corpus://{doc}"} for doc in read]
    node["answer"] = answer
    return node


def _tree() -> list[NodeRecord]:
    """The first path n1 -> n1.1 read Book and Ann; a second root, n2, read Leeds."""
    root = _node(None, 1, "Book")
    return [root, _node(root, 1, "Ann", answer="Ann"), _node(None, 2, "Leeds", answer="Leeds")]


def _first() -> FirstAnswer:
    return FirstAnswer(
        answer="Ann [1]",
        node_id="n1.1",
        path=["n1", "n1.1"],
        metrics={"llm_calls": 5, "input_tokens": 900, "output_tokens": 100, "tool_calls": 2},
        elapsed_s=12.5,
        citations=[_citation("Book", 1, " It was written by Ann.", "n1.1")],
        groundedness=1.0,
    )


def test_the_first_answer_row_is_scored_at_the_moment_it_was_ready() -> None:
    question = _question()
    result = SimpleNamespace(first=_first(), nodes=_tree())

    row = first_row(question, distractor_corpus(question, 5), "chain@first", result, "abc")

    assert row is not None
    assert (row["config"], row["corpus"], row["code"]) == ("chain@first", "distractor", "abc")
    assert (row["answer"], row["predicted"], row["em"], row["f1"]) == ("Ann [1]", "Ann", 1.0, 1.0)
    # Its own calls, tokens and seconds: the first answer's, not the run's at its end.
    assert (row["llm_calls"], row["tokens"], row["tool_calls"], row["wall_s"]) == (5, 1000, 2, 12.5)
    # Its citation quotes (Book, 1): one of the two gold facts.
    assert (row["sp_precision"], row["sp_recall"], row["citations"]) == (1.0, 0.5, 1)
    assert (row["groundedness"], row["misverified"]) == (1.0, 0)
    # What its path read (Book and Ann), not what the other root read.
    assert (row["gold_seen"], row["gold_on_path"]) == (1.0, 1.0)
    assert (row["paths"], row["nodes"], row["branched"], row["stop_reason"]) == (1, 2, 0, None)


def test_a_run_without_a_first_answer_gives_no_first_row() -> None:
    question = _question()
    corpus = distractor_corpus(question, 5)

    assert first_row(question, corpus, "chain@first", SimpleNamespace(first=None), "x") is None
    # An engine whose result has no such field at all: no row, no failure.
    assert first_row(question, corpus, "chain@first", SimpleNamespace(nodes=[]), "x") is None


def test_the_final_answer_row_is_the_run_s_at_its_end() -> None:
    question = _question()
    nodes = _tree()
    result = RunResult(
        run_id="q1-anytime",
        status="done",
        answer="Leeds",
        chosen_id="n2",
        path=["n2"],
        sources=[{"title": "Leeds", "url": "corpus://Leeds"}],
        stop_reason="frontier_exhausted",
        metrics={"llm_calls": 9, "input_tokens": 1500, "output_tokens": 200, "paths_completed": 2},
        nodes=nodes,
    )

    corpus = distractor_corpus(question, 5)
    row = final_row(question, corpus, "anytime", result, 30.0, "abc", "Who wrote Book?")

    assert (row["config"], row["predicted"], row["em"]) == ("anytime", "Leeds", 0.0)
    assert (row["llm_calls"], row["tokens"], row["wall_s"], row["paths"]) == (9, 1700, 30.0, 2)
    assert (row["gold_seen"], row["gold_on_path"], row["nodes"]) == (1.0, 0.0, 3)
    assert (row["citations"], row["sp_f1"], row["stop_reason"]) == (0, 0.0, "frontier_exhausted")
    # What the anytime search found weak in its first answer (n1.1, which cites nothing).
    assert row["first_weak"] == ["ungrounded"]
    # A chain's row says nothing of it: its search is not the anytime search's.
    chain = final_row(question, corpus, "chain", result, 30.0, "abc", "Who wrote Book?")
    assert "first_weak" not in chain


def test_a_total_of_tokens_counts_where_the_metrics_give_one() -> None:
    assert tokens({"tokens": 42, "input_tokens": 1}) == 42
    assert tokens({"input_tokens": 40, "output_tokens": 2}) == 42
    assert tokens({}) == 0


def _row(question: str, config: str, corpus: str | None = "distractor") -> dict[str, Any]:
    row: dict[str, Any] = {"id": question, "config": config, "f1": 1.0}
    if corpus is not None:
        row["corpus"] = corpus
    return row


def test_a_row_is_kept_by_its_question_configuration_and_setting(tmp_path: Path) -> None:
    progress = tmp_path / "progress.jsonl"
    rows = [_row("q1", "chain"), _row("q1", "chain", "pooled"), _row("q2", "chain", None)]

    append_rows(progress, rows)

    assert set(done_rows(progress)) == {
        ("q1", "chain", "distractor"),
        ("q1", "chain", "pooled"),
        ("q2", "chain", "distractor"),  # from before rows named their setting
    }
    assert row_key(rows[2]) == ("q2", "chain", "distractor")


def test_a_line_cut_short_by_a_killed_run_is_skipped_and_the_next_rows_start_afresh(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.jsonl"
    append_rows(progress, [_row("q1", "chain")])
    with progress.open("a", encoding="utf-8") as out:
        out.write('{"id": "q2", "config": "ch')  # the process died here

    assert set(done_rows(progress)) == {("q1", "chain", "distractor")}

    append_rows(progress, [_row("q2", "chain@first"), _row("q2", "anytime")])

    assert set(done_rows(progress)) == {
        ("q1", "chain", "distractor"),
        ("q2", "chain@first", "distractor"),
        ("q2", "anytime", "distractor"),
    }
    assert progress.read_text(encoding="utf-8").count("\n") == 4
