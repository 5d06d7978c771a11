"""The quality suite's parallel grid: the most slots that keep concurrency 1's success."""

from __future__ import annotations

from typing import Any

from bench.quality import most_slots_keeping_quality


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
