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

import numpy as np
import numpy.typing as npt

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
class Candidate:
    """A passage a search may return, as the index keeps it: its id, its length in words, and
    its words' ids and counts (blobs of `TERM_IDS` and `COUNTS`)."""

    passage_id: int
    length: int
    terms: bytes
    counts: bytes


def scores(
    candidates: Sequence[Candidate], weights: Mapping[int, float], average: float
) -> npt.NDArray[np.float64]:
    """Each candidate's BM25 score: `weights` gives each word id of the query its inverse
    document frequency (a word of several collections has an id in each); `average` is the
    average passage length of the collections searched."""
    if not candidates or not weights:
        return np.zeros(len(candidates))
    sizes = np.fromiter((len(c.counts) // COUNTS.itemsize for c in candidates), np.int64)
    terms = np.frombuffer(b"".join(c.terms for c in candidates), TERM_IDS)
    counts = np.frombuffer(b"".join(c.counts for c in candidates), COUNTS).astype(np.float64)
    owner = np.repeat(np.arange(len(candidates)), sizes)
    wanted = np.fromiter(weights.keys(), np.int64)
    order = np.argsort(wanted)
    wanted, idfs = wanted[order], np.fromiter(weights.values(), np.float64)[order]
    at = np.clip(np.searchsorted(wanted, terms), 0, len(wanted) - 1)
    held = wanted[at] == terms
    lengths = np.fromiter((c.length for c in candidates), np.float64)[owner[held]]
    parts = idfs[at[held]] * impacts(counts[held], lengths, average)
    summed: npt.NDArray[np.float64] = np.bincount(
        owner[held], weights=parts, minlength=len(candidates)
    ).astype(np.float64)
    return summed
