"""Two configurations of the multi-hop benchmark set side by side, question by question: the
figures the report states (bench/multihop_report.py), from the rows alone.

A comparison is only ever over the questions both configurations answered in the same
setting: rows of the distractor and the open-corpus settings are never paired.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench.multihop_metrics import normalize_answer
from bench.stats import mcnemar_exact, paired_interval

Rows = Sequence[Mapping[str, Any]]


def by_question(rows: Rows) -> dict[tuple[str, str], dict[str, Mapping[str, Any]]]:
    """Each question's rows by configuration, the question keyed by (setting, id)."""
    out: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        out.setdefault((row.get("corpus", "distractor"), row["id"]), {})[row["config"]] = row
    return out


def both(rows: Rows, a: str, b: str) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(`a`'s row, `b`'s row) of every question both configurations answered."""
    return [(q[a], q[b]) for q in by_question(rows).values() if a in q and b in q]


def pairs(rows: Rows, a: str, b: str, key: str) -> list[tuple[float, float]]:
    """(`a`'s `key`, `b`'s `key`) for each question both configurations answered."""
    return [(float(x[key]), float(y[key])) for x, y in both(rows, a, b)]


def head_to_head(rows: Rows, a: str, b: str, key: str) -> tuple[int, int, int]:
    """Over the questions both configurations answered: (a better, b better, tied) on `key`."""
    found = pairs(rows, a, b, key)
    return (
        sum(1 for x, y in found if x > y),
        sum(1 for x, y in found if x < y),
        sum(1 for x, y in found if x == y),
    )


def paired(rows: Rows, a: str, b: str, key: str) -> tuple[float, float, float]:
    """Over the questions both configurations answered: the mean of `a`'s `key` minus `b`'s,
    with its 95 % paired-bootstrap interval (`bench.stats.paired_interval`)."""
    found = pairs(rows, a, b, key)
    return paired_interval([x for x, _ in found], [y for _, y in found])


def mcnemar(rows: Rows, a: str, b: str) -> tuple[int, int, float]:
    """Exact match over the questions both answered: how many only `a` got right, how many
    only `b`, and the exact McNemar test's two-sided p-value."""
    found = pairs(rows, a, b, "em")
    only_a = sum(1 for x, y in found if x == 1.0 and y != 1.0)
    only_b = sum(1 for x, y in found if y == 1.0 and x != 1.0)
    return only_a, only_b, mcnemar_exact(only_a, only_b)


def same_answers(rows: Rows, a: str, b: str, *, normalised: bool = True) -> tuple[int, int]:
    """Over the questions both answered: on how many their answers are the same text (after
    the official normalisation, or exactly as given), and of how many."""
    found = both(rows, a, b)

    def text(row: Mapping[str, Any]) -> str | None:
        answer = row["predicted"] if normalised else row["answer"]
        return normalize_answer(answer) if normalised and answer is not None else answer

    return sum(1 for x, y in found if text(x) == text(y)), len(found)


def medians(rows: Rows, a: str, b: str, key: str) -> tuple[float, float]:
    """The medians of `a`'s and of `b`'s `key` over the questions both answered."""
    found = pairs(rows, a, b, key)
    return statistics.median(x for x, _ in found), statistics.median(y for _, y in found)


def ratio(rows: Rows, a: str, b: str, key: str) -> float:
    """`a`'s `key` over `b`'s, summed over the questions both answered (NaN for no `b`)."""
    found = pairs(rows, a, b, key)
    theirs = sum(y for _, y in found)
    return sum(x for x, _ in found) / theirs if theirs else float("nan")
