"""The documents benchmark's pure parts: its generated text (the same for the same seed, its
words drawn with Zipf frequencies, a more common word of the source text more often, its PDF
pages full lines of ASCII words) and its goals, met or missed by the numbers measured."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.documents_report import goals
from bench.documents_text import LINE_CHARS, PAGE_LINES, TextMaker, made_up_words, ranked_words

SOURCE = [
    "The film was made in the city. The film won.",
    "The city of Leeds is in the north. Ann Smith wrote about the city.",
]


def test_the_source_words_rank_most_common_first() -> None:
    ranked = ranked_words(SOURCE)

    assert ranked[:3] == ["the", "city", "film"]
    assert set(ranked) >= {"leeds", "ann", "smith", "north"}


def test_made_up_words_are_new_and_the_same_for_a_seed() -> None:
    words = made_up_words(50, {"the", "city"}, seed=3)

    assert len(set(words)) == 50
    assert not {"the", "city"} & set(words)
    assert words == made_up_words(50, {"the", "city"}, seed=3)


def test_the_same_seed_makes_the_same_text() -> None:
    one = TextMaker.from_texts(SOURCE, seed=7, size=200)
    two = TextMaker.from_texts(SOURCE, seed=7, size=200)

    assert one.document(5) == two.document(5)
    assert one.document(5) != TextMaker.from_texts(SOURCE, seed=8, size=200).document(5)


def test_common_words_are_drawn_more_often_than_rare_ones() -> None:
    maker = TextMaker.from_texts(SOURCE, seed=1, size=1000)
    counts = Counter(maker.document(400).lower().replace(".", "").split())

    assert counts["the"] > counts["city"] > counts[maker.words[500]]
    assert len(maker.words) == 1000


def test_pdf_pages_are_full_lines_of_ascii_words() -> None:
    pages = TextMaker.from_texts(SOURCE, seed=1, size=1000).pdf_pages(2)

    assert len(pages) == 2
    for lines in pages:
        assert len(lines) == PAGE_LINES
        assert all(0 < len(line) <= LINE_CHARS and line.isascii() for line in lines)


def _measured(p50: float, p99: float, rate: float, pdf_s: float, found: float) -> dict[str, Any]:
    backend = {
        "latency": {"questions": {"8": {"p50_ms": p50, "p99_ms": p99}}},
        "ingest": {"passages_per_s": rate},
        "pdf": {"total_s": pdf_s},
    }
    return {
        "config": {"searchers": [1, 8], "k": 5},
        "pdf": {"pages": 300},
        "recall_at_k": {"bm25s": 0.815, "sqlite": found},
        "backends": {"sqlite": backend},
    }


def test_the_goals_hold_within_their_bounds() -> None:
    met = goals(_measured(p50=9.0, p99=49.0, rate=1200.0, pdf_s=20.0, found=0.79))

    assert [g["goal"] for g in met] == [
        "SQLite search p50, 8 searchers",
        "SQLite search p99, 8 searchers",
        "SQLite ingest, text",
        "SQLite 300-page PDF read, cut and stored",
        "SQLite recall@5",
    ]
    assert all(g["met"] for g in met)


def test_a_goal_past_its_bound_is_missed() -> None:
    missed = goals(_measured(p50=11.0, p99=49.0, rate=900.0, pdf_s=31.0, found=0.78))

    assert [g["met"] for g in missed] == [False, True, False, False, False]
