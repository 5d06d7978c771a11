"""A search's words: taken from any text as plain words, and quoted for FTS5 so that no query
is an operator or a syntax error."""

from __future__ import annotations

import sqlite3

from app.store.query_words import MAX_TERMS, fts5_match, query_terms


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
