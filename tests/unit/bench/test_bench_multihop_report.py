"""The multi-hop section of docs/benchmarks.md: the question-by-question counts."""

from __future__ import annotations

from bench.multihop_report import head_to_head, wide_lines


def test_head_to_head_counts_only_questions_both_configurations_answered() -> None:
    rows = [
        {"id": "q1", "config": "mcts", "f1": 1.0},
        {"id": "q1", "config": "chain", "f1": 0.5},
        {"id": "q2", "config": "mcts", "f1": 0.0},
        {"id": "q2", "config": "chain", "f1": 0.4},
        {"id": "q3", "config": "mcts", "f1": 0.2},
        {"id": "q3", "config": "chain", "f1": 0.2},
        {"id": "q4", "config": "mcts", "f1": 1.0},  # no chain row: not counted
    ]

    assert head_to_head(rows, "mcts", "chain", "f1") == (1, 1, 1)


def _row(question: str, config: str, f1: float, paths: int, calls: int = 6) -> dict[str, object]:
    return {
        "id": question,
        "config": config,
        "f1": f1,
        "sp_f1": 0.0,
        "paths": paths,
        "llm_calls": calls,
    }


def test_the_wide_configurations_are_counted_against_the_default_on_their_questions() -> None:
    rows = [
        _row("q1", "mcts", 1.0, 1, calls=5),
        _row("q1", "breadth", 0.0, 3, calls=10),  # wider and worse
        _row("q2", "mcts", 0.0, 2, calls=7),
        _row("q2", "breadth", 0.5, 2, calls=8),  # wider and better
        # No breadth row: not counted, neither its calls nor its F1 in the default's figures.
        _row("q3", "mcts", 0.9, 2, calls=16),
    ]
    # The totals are over every question a configuration ran; the comparison is not.
    totals = {"mcts": {"llm_calls": 9.3, "f1": 0.63}, "breadth": {"llm_calls": 9.0, "f1": 0.25}}
    multihop = {"totals": totals, "rows": rows}

    [blank, line] = wide_lines(multihop)

    assert blank == ""
    assert "on the same 2 questions — answer F1: better on 1, worse on 1, tied on 0" in line
    assert "two paths or more on 2 of them (the default on 1), and on 1 of those" in line
    assert line.endswith(
        "On those questions it made 9.0 model calls a question against the default's 6.0, "
        "for an answer F1 of 0.25 against 0.50."
    )
