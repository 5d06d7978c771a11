"""A search's words: taken from any text as plain words, quoted for FTS5 so that no query is an
operator or a syntax error, and split into the rarer ones a search ranks passages by and the
common ones."""

from __future__ import annotations

import sqlite3

import pytest

from app.store.query_words import MAX_TERMS, fts5_match, query_terms, split_terms


def test_words_are_lower_cased_once_each_without_stop_words() -> None:
    assert query_terms("The Otters and the otters' STONES, e-mail_v2!") == [
        "otters",
        "stones",
        "e",
        "mail",
        "v2",
    ]


def test_query_syntax_is_no_word() -> None:
    assert query_terms('AND OR " NEAR( * ^ : -') == ["near"]
    assert query_terms("the of and") == []


def test_at_most_max_terms_are_kept() -> None:
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_TERMS


def test_every_quoted_term_matches_in_fts5_without_error() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    db.execute("INSERT INTO t (x) VALUES ('and or near otters')")
    for query in ['AND OR "', "NEAR(otters)", "otters*", "x: otters", 'a"b', "ünï 漢字"]:
        match = fts5_match(query_terms(query) or ["none"])
        db.execute("SELECT * FROM t WHERE t MATCH ?", (match,)).fetchall()
    assert fts5_match(['a"b', "or"]) == '"a""b" OR "or"'


def test_the_rarest_words_are_kept_while_their_passages_fit_the_budget() -> None:
    terms = ["film", "roth", "writer", "childers"]

    rare, common = split_terms(terms, [9000, 12, 700, 300], budget=1000)

    assert rare == ["roth", "childers"]  # 12 + 300; with "writer" 1012, over the budget
    assert common == ["film", "writer"]


def test_the_rarest_word_is_kept_even_over_the_budget() -> None:
    assert split_terms(["film", "american"], [5001, 4000], budget=1000) == (
        ["american"],
        ["film"],
    )


def test_every_word_is_rare_when_all_fit() -> None:
    assert split_terms(["a1", "b2", "c3"], [0, 5, 5], budget=10) == (["a1", "b2", "c3"], [])


def test_counts_must_match_the_words() -> None:
    with pytest.raises(ValueError, match="2 terms but 1 counts"):
        split_terms(["a1", "b2"], [1])
