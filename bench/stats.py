"""Small statistics for repeated measurements: medians with min-max, percentiles, a paired
bootstrap interval for the mean difference of two configurations on the same questions, and
an exact McNemar test for two configurations' right/wrong answers on the same questions."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import TypedDict


class Spread(TypedDict):
    """The median of repetitions with their range."""

    median: float
    min: float
    max: float
    n: int


def spread(values: Sequence[float]) -> Spread:
    """Median, min and max of `values` (NaN for none)."""
    if not values:
        return {"median": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def fmt(s: Spread, digits: int = 2, unit: str = "") -> str:
    """`median (min-max)` for a table cell."""
    if s["n"] == 0:
        return "-"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median']:.{digits}f}{unit}"
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def paired_interval(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """The mean of `a[i] - b[i]` and its 95 % percentile-bootstrap interval (questions drawn
    with replacement, `resamples` times, seeded): (mean, low, high). Raises ValueError for
    lengths that differ or for none."""
    if len(a) != len(b) or not a:
        raise ValueError(f"want two equal, non-empty samples, got {len(a)} and {len(b)}")
    differences = [x - y for x, y in zip(a, b, strict=True)]
    draw = random.Random(seed)
    n = len(differences)
    means = sorted(statistics.fmean(draw.choices(differences, k=n)) for _ in range(resamples))
    low = means[int(0.025 * resamples)]
    high = means[min(resamples - 1, int(0.975 * resamples))]
    return statistics.fmean(differences), low, high


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The two-sided p-value of an exact McNemar test: of the questions exactly one of two
    configurations got right (`only_a` by the first alone, `only_b` by the second alone), is
    the split further from even than chance would make it? Twice the binomial(n, 1/2) tail
    of the smaller count, at most 1; 1.0 when no question tells them apart. Raises
    ValueError for a negative count."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"want counts >= 0, got {only_a} and {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / (1 << n))
