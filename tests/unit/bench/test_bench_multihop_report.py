"""The multi-hop section of docs/benchmarks.md: the question-by-question count."""

from __future__ import annotations

from bench.multihop_report import head_to_head


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
