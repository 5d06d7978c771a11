"""The terminal tree printer."""

from __future__ import annotations

import io
import json

import pytest

from app.cli.render import JsonLines, Progress, TreePrinter
from testkit.clock import FakeClock


def test_the_printer_indents_by_depth_and_ends_with_answer_and_costs() -> None:
    out = io.StringIO()
    printer = TreePrinter(out)
    root = {"node_id": "n1", "parent_id": None, "depth": 0, "step": "find X"}
    for event in [
        {"type": "plan", "steps": ["find X"], "root": root},
        {"type": "node_started", "node_id": "n1"},
        {
            "type": "tool_call",
            "node_id": "n1",
            "name": "web_search",
            "args": {"query": "X"},
            "ok": False,
            "error_kind": "rate_limited",
            "seconds": 0.25,
        },
        {"type": "node_finished", "node_id": "n1", "status": "done", "seconds": 1.0, "error": None},
        {
            "type": "candidates",
            "parent_id": "n1",
            "complete": False,
            "nodes": [{"node_id": "n2", "parent_id": "n1", "depth": 1, "step": "check X"}],
        },
        {"type": "node_started", "node_id": "n2"},
        {
            "type": "done",
            "answer": "42",
            "partial": False,
            "stop_reason": "max_paths",
            "sources": [{"title": "T", "url": "https://x.test"}],
            "metrics": {
                "llm_calls": 7,
                "input_tokens": 10,
                "output_tokens": 5,
                "tool_calls": 1,
                "wall_s": 2.5,
            },
        },
    ]:
        printer.handle(event)

    lines = out.getvalue().splitlines()
    assert "  ▶ n1 find X" in lines
    assert "    ⚙ web_search(query='X') failed (rate_limited) 0.2s" in lines
    assert "    ▶ n2 check X" in lines
    assert "42" in lines
    assert "  - T: https://x.test" in lines
    assert lines[-1] == "stop: max_paths · model calls 7 · tokens 10+5 · tool calls 1 · 2.5s"


CITED = {
    "answer": "Paris is the capital.[1] It is big.",
    "citations": [
        {
            "marker": 1,
            "quote": "Paris is the capital and largest city",
            "source": {"id": "u", "title": "France", "url": "https://en.wikipedia.org/wiki/France"},
        }
    ],
    "groundedness": 0.5,
    "unsupported": ["It is big."],
    "rejected": [{"marker": 2, "evidence_id": "E9", "quote": "made up", "reason": "unknown"}],
}


def test_footnotes_list_the_verified_quotes_groundedness_and_what_is_unsupported() -> None:
    from app.cli.render import footnotes

    lines = footnotes(CITED).splitlines()

    assert lines[1] == (
        '  [1] "Paris is the capital and largest city" — France, '
        "https://en.wikipedia.org/wiki/France"
    )
    assert "  groundedness 0.50 (sentences backed by a verified quote)" in lines
    assert "  unsupported: It is big." in lines
    assert "  1 citation(s) rejected: their quote is not in the evidence" in lines


def test_a_run_without_grounding_has_no_footnotes() -> None:
    from app.cli.render import footnotes

    assert footnotes({"answer": "42"}) == ""


PARAMS = {"max_paths": 2, "max_llm_calls": 150, "max_tokens": 2_000_000}


def test_the_progress_line_counts_paths_calls_and_tokens_against_the_budgets() -> None:
    clock = FakeClock()
    progress = Progress(clock)
    assert progress.line() == "starting · 0s"
    progress.handle({"type": "run_started", "params": PARAMS})
    progress.handle(
        {
            "type": "path_completed",
            "metrics": {"llm_calls": 7, "input_tokens": 1200, "output_tokens": 34},
        }
    )
    clock.now += 12.4

    assert progress.line() == ("paths 1/2 · model calls 7/150 · tokens 1,234/2,000,000 · 12s")


def test_an_event_without_metrics_leaves_the_counts() -> None:
    progress = Progress(FakeClock())
    progress.handle({"type": "run_started", "params": PARAMS})
    progress.handle({"type": "candidates", "metrics": {"llm_calls": 3, "input_tokens": 90}})
    progress.handle({"type": "node_started", "node_id": "n1"})
    progress.handle({"type": "node_finished", "metrics": None})

    assert progress.line().startswith("paths 0/2 · model calls 3/150 · tokens 90/2,000,000")


def test_json_lines_print_each_event_as_one_line_of_json() -> None:
    out = io.StringIO()
    printer = JsonLines(out)
    events = [
        {"type": "run_started", "task": "two\nlines", "params": PARAMS},
        {"type": "done", "answer": "café"},
    ]
    for event in events:
        printer.handle(event)

    assert [json.loads(line) for line in out.getvalue().splitlines()] == events


def test_the_first_answer_prints_as_provisional_and_the_end_says_whether_it_was_kept() -> None:
    out = io.StringIO()
    printer = TreePrinter(out)
    first = {"answer": "Paris.[1]", "node_id": "n1.1", "path": ["n1", "n1.1"]}
    for event in [
        {
            "type": "answer_ready",
            **first,
            "elapsed_s": 12.0,
            "metrics": {"llm_calls": 5},
            "citations": [
                {"marker": 1, "quote": "Paris is the capital", "source": {"title": "France"}}
            ],
            "groundedness": 1.0,
        },
        {
            "type": "branched",
            "node_id": "n1.1",
            "parent_id": "n1",
            "reasons": ["no new evidence from n1.1"],
            "nodes": [{"node_id": "n1.2", "parent_id": "n1", "depth": 1, "step": "ask again"}],
        },
        {
            "type": "done",
            "answer": "Paris.[1]",
            "chosen_id": "n1.1",
            "chosen_by": "first",
            "first": first,
            "stop_reason": "frontier_exhausted",
            "metrics": {},
        },
    ]:
        printer.handle(event)

    text = out.getvalue()
    assert "first answer (provisional, 5 model calls, 12.0s; the search goes on):" in text
    assert '  [1] "Paris is the capital" — France' in text
    assert "⑂ beside n1.1: n1.2 'ask again' (no new evidence from n1.1)" in text
    assert "answer (the first answer, kept):" in text


@pytest.mark.parametrize(
    ("chosen_id", "chosen_by", "said"),
    [
        (
            "n1.1.1",
            "carried",
            "answer (the first path's, once it ran the steps its plan had left):",
        ),
        ("n2.1", "vote", "answer (replaces the first answer):"),
    ],
)
def test_the_end_says_how_an_answer_other_than_the_first_was_reached(
    chosen_id: str, chosen_by: str, said: str
) -> None:
    out = io.StringIO()
    first = {"answer": "Paris.[1]", "node_id": "n1.1", "path": ["n1", "n1.1"]}
    done = {"type": "done", "answer": "Lyon.", "chosen_id": chosen_id, "chosen_by": chosen_by}
    TreePrinter(out).handle({**done, "first": first, "stop_reason": "max_paths", "metrics": {}})

    assert said in out.getvalue()
