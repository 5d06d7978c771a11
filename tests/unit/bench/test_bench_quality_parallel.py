"""The quality suite's parallel grid: the most slots that keep concurrency 1's success, and its
report."""

from __future__ import annotations

from typing import Any

from bench.quality import most_slots_keeping_quality
from bench.quality_report import parallel_section
from tests.support.text import assert_says


def _cells(rule: str, success: dict[int, float]) -> list[dict[str, Any]]:
    return [{"in_flight_rule": rule, "concurrency": c, "success": s} for c, s in success.items()]


def test_the_largest_level_within_the_tolerance_of_one_slot_wins() -> None:
    cells = _cells("unobserved", {1: 0.90, 4: 0.895, 8: 0.88, 16: 0.95})

    assert most_slots_keeping_quality(cells, "unobserved") == 16
    assert most_slots_keeping_quality(cells[:3], "unobserved") == 4


def test_only_the_named_rule_counts() -> None:
    cells = _cells("unobserved", {1: 0.9, 4: 0.7}) + _cells("virtual_loss", {1: 0.9, 4: 0.9})

    assert most_slots_keeping_quality(cells, "unobserved") == 1
    assert most_slots_keeping_quality(cells, "virtual_loss") == 4


def test_without_a_one_slot_level_there_is_no_answer() -> None:
    assert most_slots_keeping_quality(_cells("unobserved", {4: 0.9}), "unobserved") is None


def _grid(success: dict[tuple[str, int], float]) -> dict[str, Any]:
    cells = [
        {
            "in_flight_rule": rule,
            "concurrency": conc,
            "success": s,
            "regret": 0.01,
            "llm_calls": 30.0,
            "serial_calls": 10.0,
            "wall_s": 0.1,
        }
        for (rule, conc), s in success.items()
    ]
    rules = ("unobserved", "virtual_loss")
    return {"cells": cells, "most_slots": {r: most_slots_keeping_quality(cells, r) for r in rules}}


def test_the_report_puts_the_rules_side_by_side_at_both_settings() -> None:
    suite = _grid({("unobserved", 1): 0.8, ("unobserved", 8): 0.9, ("virtual_loss", 1): 0.8})
    defaults = _grid({("unobserved", 1): 0.7, ("unobserved", 8): 0.5, ("virtual_loss", 1): 0.7})
    q = {
        "config": {
            "default": "mcts",
            "structures": {"wide": {}},
            "concurrency": [1, 8],
            "in_flight_rules": ["unobserved", "virtual_loss"],
            "parallel_seeds": [1, 2, 3],
            "parallel_tolerance": 0.01,
            "default_concurrency": 4,
            "default_in_flight_rule": "virtual_loss",
        },
        "parallel": {"suite": suite, "defaults": defaults},
    }

    text = "\n".join(parallel_section(q))

    assert_says(
        text,
        "| 8 | 0.90 (0.010) | 30 / 10.0 | 0.10 s | - | - | - |",
        "| 8 | 0.50 (0.010) |",
        "(WU-UCT): 8 at the suite's budgets, 1 at the defaults",
        "virtual loss: 1 at the suite's budgets, 1 at the defaults",
        "`max_concurrency` 4 with virtual loss",
    )


def test_results_without_the_grid_add_nothing() -> None:
    assert parallel_section({"config": {}}) == []
