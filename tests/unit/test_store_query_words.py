"""A search's words: taken from a query and from a passage's text alike, as plain words (never a
query language), lower-cased, without accents or stop words, stemmed."""

from __future__ import annotations

from app.store.query_words import MAX_TERMS, MAX_WORD_CHARS, passage_words, query_terms


def test_words_are_lower_cased_stemmed_once_each_without_stop_words() -> None:
    assert query_terms("The Otters and the otters' STONES, e-mail_v2!") == [
        "otter",
        "stone",
        "e",
        "mail",
        "v2",
    ]


def test_query_syntax_is_no_word() -> None:
    assert query_terms('AND OR " NEAR( * ^ : -') == ["near"]
    assert query_terms("the of and") == []


def test_accents_are_dropped_so_that_either_spelling_finds_the_other() -> None:
    assert query_terms("Pedro Rodríguez") == query_terms("pedro rodriguez")
    assert passage_words("Müller, Ångström, 漢字") == {"muller": 1, "angstrom": 1, "漢字": 1}


def test_a_passage_counts_each_stemmed_word() -> None:
    counts = passage_words("Films were filmed; the film festival screened films.")

    assert counts == {"film": 4, "festiv": 1, "screen": 1}


def test_a_query_and_a_passage_stem_a_word_the_same_way() -> None:
    assert set(query_terms("Which filmmakers were running?")) <= set(
        passage_words("The filmmakers kept running.")
    )


def test_at_most_max_terms_are_kept() -> None:
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_TERMS


def test_an_overlong_run_of_letters_is_no_word() -> None:
    blob = "a" * (MAX_WORD_CHARS + 1)

    assert passage_words(f"heron {blob}") == {"heron": 1}
    assert query_terms(blob) == []
