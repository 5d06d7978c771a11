"""The documents benchmark's searching (bench/documents.py): recall@k of a search over
questions with known relevant documents, and the latency of searches made by concurrent
callers."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

from app.store.base import StoreUnavailable
from bench.stats import percentile

Search = Callable[[str], Awaitable[list[str]]]
"""The ids of the documents of the best passages for a query, best first."""


def recall(found: Sequence[str], gold: set[str]) -> float:
    """The share of `gold` among `found`."""
    return len(gold.intersection(found)) / len(gold) if gold else 0.0


async def mean_recall(search: Search, questions: Sequence[tuple[str, set[str]]]) -> float:
    """`recall` of each question's search (the question its query) for its relevant
    documents, averaged over the questions."""
    return statistics.fmean([recall(await search(q), gold) for q, gold in questions])


def as_search(search: Callable[[str], list[str]]) -> Search:
    """A search made in the caller's thread as a `Search`."""

    async def wrapped(query: str) -> list[str]:
        return search(query)

    return wrapped


def mapped(search: Search, ids: dict[str, str]) -> Search:
    """`search`, the ids it gives read through `ids` (one missing from it as itself)."""

    async def wrapped(query: str) -> list[str]:
        return [ids.get(doc, doc) for doc in await search(query)]

    return wrapped


async def timed(search: Search, queries: Iterable[str], searchers: int) -> tuple[list[float], int]:
    """Each query searched once by `searchers` callers taking the next one in turn: the
    milliseconds each search took, as its caller saw them (a search the store gave up on, past
    its call's time bound, with the time it took to fail), and how many failed."""
    pending = iter(queries)
    took: list[float] = []
    failed = 0

    async def caller() -> None:
        nonlocal failed
        for query in pending:
            started = time.perf_counter()
            try:
                await search(query)
            except StoreUnavailable:
                failed += 1
            took.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(caller() for _ in range(searchers)))
    return took, failed


def latency(took: Sequence[float], failed: int = 0) -> dict[str, float]:
    """Percentiles of a sample of milliseconds, and how many of the searches failed."""
    return {
        "p50_ms": percentile(took, 50),
        "p90_ms": percentile(took, 90),
        "p99_ms": percentile(took, 99),
        "max_ms": max(took, default=float("nan")),
        "mean_ms": statistics.fmean(took) if took else float("nan"),
        "n": len(took),
        "failed": failed,
    }


async def latencies(
    searches: dict[str, Search],
    queries: dict[str, list[str]],
    searchers: Sequence[int],
    rounds: int,
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """For each search (a backend's), each kind of query and each number of concurrent
    searchers, the `latency` of `rounds` passes over the queries; the searches take turns each
    round, so that a change in the machine's load falls on all of them, after a pass of every
    query that is not counted (caches warm)."""
    every = [q for kind in queries.values() for q in kind]
    for search in searches.values():
        await timed(search, every, max(searchers))
    took: dict[tuple[str, str, int], list[float]] = {}
    failed: dict[tuple[str, str, int], int] = {}
    for callers in searchers:
        for _ in range(rounds):
            for name, search in searches.items():
                for kind, listed in queries.items():
                    key = (name, kind, callers)
                    sample, failures = await timed(search, listed, callers)
                    took.setdefault(key, []).extend(sample)
                    failed[key] = failed.get(key, 0) + failures
    return {
        name: {
            kind: {
                str(callers): latency(took[name, kind, callers], failed[name, kind, callers])
                for callers in searchers
            }
            for kind in queries
        }
        for name in searches
    }
