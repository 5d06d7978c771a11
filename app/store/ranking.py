"""BM25, as the store ranks passages: the numbers of the index both backends keep
(app/store/passage_index.py) and the exact scores of a search's candidates. Pure.

A passage's score for a query is the sum over the query's words it holds of
`idf(word) * impact(count, length, average)`, with k1 1.2 and b 0.75 (Lucene's BM25, whose
inverse document frequency is never negative). The statistics are those of the collections a
search covers: how many passages they hold, their average length in words, and how many
passages hold each word.

The index keeps each word's passages ordered by their `impact` as it was when they were
written (the average length then), so that a search reads a common word's best passages
first and never all of them; the candidates are then scored exactly (`scores`), with today's
statistics, from each passage's own word counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app.store.reads import Row

K1 = 1.2
B = 0.75
TERM_IDS = np.dtype("<i8")
"""How a passage's word ids are kept, one after another in a blob."""
COUNTS = np.dtype("<u2")
"""How often the passage holds each of those words (at most `MAX_COUNT`), in a blob."""
MAX_COUNT = 65_535


def idf(passages: float, holding: float) -> float:
    """The inverse document frequency of a word that `holding` of `passages` passages hold."""
    return math.log(1.0 + (passages - holding + 0.5) / (holding + 0.5))


def impacts(
    counts: npt.NDArray[np.float64],
    lengths: npt.NDArray[np.float64],
    averages: float | npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """What a word held `counts` times weighs in a passage of `lengths` words, the average
    being `averages` (each element-wise): BM25's saturating term frequency over the normalised
    length. The same arrays give the same weights, bit for bit, whenever they are computed
    (a deletion finds a posting by its weight)."""
    norm = K1 * (1.0 - B + B * lengths / np.maximum(averages, 1.0))
    weights: npt.NDArray[np.float64] = counts * (K1 + 1.0) / (counts + norm)
    return weights


@dataclass(frozen=True, slots=True)
class Candidates:
    """Passages a search may return, as the index keeps them, column by column: their ids,
    their lengths in words, how many distinct words each holds, and all their words' ids and
    counts one passage after another (the blobs of `TERM_IDS` and `COUNTS`, joined)."""

    ids: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    sizes: npt.NDArray[np.int64]
    terms: bytes
    counts: bytes

    @classmethod
    def of_packed(cls, row: Row) -> Candidates:
        """Of one row packing those columns (app/store/index_sql.py `IndexSql.candidates`): the
        `ids`, the `lengths` and each one's counts' bytes (`sizes`) as lists or as
        comma-separated text, the `terms` and `counts` blobs joined; nulls when there are
        none."""
        return cls(
            _numbers(row["ids"], np.int64),
            _numbers(row["lengths"], np.float64),
            _numbers(row["sizes"], np.int64) // COUNTS.itemsize,
            bytes(row["terms"] or b""),
            bytes(row["counts"] or b""),
        )

    def __len__(self) -> int:
        return len(self.ids)


GUESS_SCALE = 1_000_000
"""A posting's guessed part (its word's inverse document frequency times its weight) is read as
an integer of millionths: a guess only chooses which passages are scored exactly."""


@dataclass(frozen=True, slots=True)
class Guesses:
    """The postings a search read, column by column: each one's passage id and its guessed part
    (`GUESS_SCALE`); a passage read for several words has a posting for each."""

    ids: npt.NDArray[np.int64]
    parts: npt.NDArray[np.int64]

    @classmethod
    def of_packed(cls, row: Row) -> Guesses:
        """Of one row packing those columns (app/store/index_sql.py `IndexSql.postings`): the
        `ids` and `parts` as lists or as comma-separated text; nulls when there are none."""
        return cls(_numbers(row["ids"], np.int64), _numbers(row["parts"], np.int64))

    def best(self, n: int) -> list[int]:
        """The ids of the `n` passages of the highest guessed scores (their parts summed), the
        higher first and the lower id first between equal ones."""
        if not len(self.ids):
            return []
        passages, owner = np.unique(self.ids, return_inverse=True)
        # Sums of integers below 2**53: exact in floating point.
        summed = np.bincount(owner, weights=self.parts, minlength=len(passages))
        order = np.lexsort((passages, -summed))[:n]
        return [int(i) for i in passages[order]]


def _numbers(values: str | Sequence[int] | None, dtype: type[Any]) -> npt.NDArray[Any]:
    if values is None:
        return np.zeros(0, dtype)
    if isinstance(values, str):  # integers, as SQLite's group_concat writes them
        return np.fromstring(values, np.int64, sep=",").astype(dtype)
    return np.array(values, dtype)


def scores(
    candidates: Candidates, weights: Mapping[int, float], average: float
) -> npt.NDArray[np.float64]:
    """Each candidate's BM25 score: `weights` gives each word id of the query its inverse
    document frequency (a word of several collections has an id in each); `average` is the
    average passage length of the collections searched."""
    if not len(candidates) or not weights:
        return np.zeros(len(candidates))
    ends = np.cumsum(candidates.sizes)
    terms = np.frombuffer(candidates.terms, TERM_IDS)
    wanted = np.fromiter(weights.keys(), np.int64)
    order = np.argsort(wanted)
    wanted, idfs = wanted[order], np.fromiter(weights.values(), np.float64)[order]
    held = np.flatnonzero(np.isin(terms, wanted))
    owner = np.searchsorted(ends, held, side="right")
    counts = np.frombuffer(candidates.counts, COUNTS)[held].astype(np.float64)
    parts = idfs[np.searchsorted(wanted, terms[held])] * impacts(
        counts, candidates.lengths[owner], average
    )
    summed: npt.NDArray[np.float64] = np.bincount(
        owner, weights=parts, minlength=len(candidates)
    ).astype(np.float64)
    return summed


def best(
    candidates: Candidates, scored: npt.NDArray[np.float64], k: int
) -> list[tuple[int, float]]:
    """The `k` candidates of the highest positive scores, as (id, score), the higher score first
    and the lower id first between equal ones."""
    order = np.lexsort((candidates.ids, -scored))[:k]
    return [(int(candidates.ids[i]), float(scored[i])) for i in order if scored[i] > 0]
