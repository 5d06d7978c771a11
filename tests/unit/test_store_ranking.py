"""BM25 as the store scores a search's candidates: each candidate's words and counts, kept as
blobs, scored by the query's words' inverse document frequencies, the same as the formula
computed word by word."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.store.ranking import COUNTS, K1, TERM_IDS, B, Candidate, idf, impacts, scores


def _candidate(passage_id: int, held: dict[int, int]) -> Candidate:
    words = sorted(held)
    return Candidate(
        passage_id=passage_id,
        length=sum(held.values()),
        terms=np.array(words, TERM_IDS).tobytes(),
        counts=np.array([held[w] for w in words], COUNTS).tobytes(),
    )


def _by_formula(held: dict[int, int], weights: dict[int, float], average: float) -> float:
    length = sum(held.values())
    return sum(
        weights[w] * n * (K1 + 1) / (n + K1 * (1 - B + B * length / average))
        for w, n in held.items()
        if w in weights
    )


def test_each_candidate_scores_as_the_formula_word_by_word() -> None:
    held = [{1: 2, 5: 1, 9: 3}, {5: 4}, {2: 1, 3: 1}, {1: 1, 9: 1, 40: 7}]
    weights = {9: 2.5, 1: 0.7, 40: 1.1}
    average = 4.5

    found = scores([_candidate(i, h) for i, h in enumerate(held)], weights, average)

    expected = [_by_formula(h, weights, average) for h in held]
    assert found.tolist() == pytest.approx(expected, rel=1e-12)
    assert found[1] == 0.0  # holds none of the query's words
    assert found[2] == 0.0


def test_no_candidates_or_no_words_score_nothing() -> None:
    assert scores([], {1: 1.0}, 3.0).tolist() == []
    assert scores([_candidate(7, {1: 1})], {}, 3.0).tolist() == [0.0]


def test_a_rarer_word_weighs_more_and_weights_never_go_negative() -> None:
    assert idf(1000, 1) > idf(1000, 100) > idf(1000, 1000) > 0
    assert idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))


def test_a_word_held_more_often_weighs_more_but_saturates() -> None:
    counts = np.array([1.0, 2.0, 4.0, 100.0])
    weights = impacts(counts, np.full(4, 10.0), 10.0)

    assert list(weights) == sorted(weights)
    assert weights[-1] < K1 + 1


def test_weights_computed_again_from_the_same_numbers_are_the_same_bits() -> None:
    """A deletion finds a posting by its weight, computed again from the passage's counts, its
    length and the average it was weighed by, one at a time or all together."""
    counts = np.array([1.0, 3.0, 2.0])
    lengths = np.array([17.0, 17.0, 60.0])
    average = 23.123456789

    together = impacts(counts, lengths, average)
    apart = [
        impacts(counts[i : i + 1], lengths[i : i + 1], np.array([average]))[0] for i in range(3)
    ]

    assert together.tobytes() == np.array(apart).tobytes()
