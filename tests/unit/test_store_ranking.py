"""BM25 as the store scores a search's candidates: each candidate's words and counts, kept as
blobs, scored by the query's words' inverse document frequencies, the same as the formula
computed word by word."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.store import ranking
from app.store.ranking import COUNTS, K1, TERM_IDS, B, Candidates, best, idf, impacts, scores


def _candidates(held: list[dict[int, int]], ids: list[int] | None = None) -> Candidates:
    """Passages holding each word id of a `held` the times it gives (ids 0, 1, … unless
    given), as the index keeps them: each one's words by id, with their counts."""
    words = [sorted(h) for h in held]
    return Candidates(
        ids=np.array(ids if ids is not None else range(len(held)), np.int64),
        lengths=np.array([sum(h.values()) for h in held], np.float64),
        sizes=np.array([len(w) for w in words], np.int64),
        terms=b"".join(np.array(w, TERM_IDS).tobytes() for w in words),
        counts=b"".join(
            np.array([h[x] for x in w], COUNTS).tobytes() for h, w in zip(held, words, strict=True)
        ),
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

    found = scores(_candidates(held), weights, average)

    expected = [_by_formula(h, weights, average) for h in held]
    assert found.tolist() == pytest.approx(expected, rel=1e-12)
    assert found[1] == 0.0  # holds none of the query's words
    assert found[2] == 0.0


def test_no_candidates_or_no_words_score_nothing() -> None:
    assert scores(_candidates([]), {1: 1.0}, 3.0).tolist() == []
    assert scores(_candidates([{1: 1}], [7]), {}, 3.0).tolist() == [0.0]


def test_the_best_are_the_highest_positive_scores_the_lower_id_first_between_equals() -> None:
    held = [{1: 1}, {2: 1}, {1: 1}, {3: 1}, {1: 3}]
    candidates = _candidates(held, [40, 30, 20, 10, 50])
    scored = scores(candidates, {1: 1.0, 3: 2.0}, 1.0)

    ranked = best(candidates, scored, 4)

    assert [passage_id for passage_id, _ in ranked] == [10, 50, 20, 40]
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert best(candidates, scored, 10)[-1][0] == 40  # 30 holds no word of the query
    assert best(candidates, scored, 0) == []


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


def test_a_packed_row_reads_as_the_rows_it_packs_on_both_dialects() -> None:
    """SQLite packs numbers as comma-separated text, Postgres as arrays; none packs as nulls."""
    held = [{3: 2, 8: 1}, {1: 1}, {2: 4, 3: 1, 9: 1}]
    rows = _candidates(held, [11, 12, 13])
    terms, counts = rows.terms, rows.counts
    sqlite = {
        "ids": "11,12,13",
        "lengths": "3,1,6",
        "terms": terms,
        "counts": counts,
        "sizes": "4,2,6",
    }
    postgres = {**sqlite, "ids": [11, 12, 13], "lengths": [3, 1, 6], "sizes": [4, 2, 6]}
    weights = {3: 1.5, 9: 0.5}

    for packed in (Candidates.of_packed(sqlite), Candidates.of_packed(postgres)):
        assert packed.ids.tolist() == [11, 12, 13]
        assert packed.sizes.tolist() == [2, 1, 3]
        assert scores(packed, weights, 3.0).tolist() == scores(rows, weights, 3.0).tolist()
    none = dict.fromkeys(("ids", "lengths", "terms", "counts", "sizes"))
    assert len(Candidates.of_packed(none)) == 0
    assert (
        best(Candidates.of_packed(none), scores(Candidates.of_packed(none), weights, 3.0), 5) == []
    )


def test_guesses_sum_a_passage_s_parts_and_rank_the_higher_first_the_lower_id_between_equals() -> (
    None
):
    """A passage read for several words has a posting for each: their parts are summed."""
    guesses = ranking.Guesses.of_packed({"ids": "7,3,9,3,5,9", "parts": "10,4,1,6,10,9"})

    assert guesses.best(10) == [3, 5, 7, 9]  # 3: 4 + 6; 9: 1 + 9; 5 and 7: 10 each
    assert guesses.best(2) == [3, 5]
    assert guesses.best(0) == []


def test_guesses_read_alike_from_text_and_from_arrays_and_none_from_nulls() -> None:
    text = ranking.Guesses.of_packed({"ids": "1,2,2", "parts": "5,1,3"})
    arrays = ranking.Guesses.of_packed({"ids": [1, 2, 2], "parts": [5, 1, 3]})

    assert text.best(5) == arrays.best(5) == [1, 2]
    assert ranking.Guesses.of_packed({"ids": None, "parts": None}).best(5) == []


def test_guessed_sums_stay_exact_at_the_largest_parts_a_search_can_read() -> None:
    """Parts are millionths: a word's part is at most its inverse document frequency (under 25
    for any collection) times K1 + 1, and a query has at most 32 words."""
    largest = int(25 * (K1 + 1) * 1_000_000)
    ids = [1] * 32 + [2] * 32
    parts = [largest] * 32 + [largest] * 31 + [largest - 1]

    assert ranking.Guesses.of_packed({"ids": ids, "parts": parts}).best(2) == [1, 2]
