"""The terminal tree printer."""

from __future__ import annotations

import io

from app.render import TreePrinter


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
    from app.render import footnotes

    lines = footnotes(CITED).splitlines()

    assert lines[1] == (
        '  [1] "Paris is the capital and largest city" — France, '
        "https://en.wikipedia.org/wiki/France"
    )
    assert "  groundedness 0.50 (sentences backed by a verified quote)" in lines
    assert "  unsupported: It is big." in lines
    assert "  1 citation(s) rejected: their quote is not in the evidence" in lines


def test_a_run_without_grounding_has_no_footnotes() -> None:
    from app.render import footnotes

    assert footnotes({"answer": "42"}) == ""
