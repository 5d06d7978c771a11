"""A search's words, taken from a user's query the same way for both backends, and the FTS5
expression SQLite matches them with. Pure.

A query is plain words, never a query language: every run of letters and digits is a word
(what SQLite's `unicode61` tokenizer and Postgres's parser both split on), lower-cased, each
once, English stop words left out (Postgres's `english` list, so that both backends drop the
same ones; a stop word matches nearly every passage and ranks next to nothing), at most
`MAX_TERMS` of them. A passage matches when it holds any of the words, and ranks higher the
more of them (and the rarer) it holds.
"""

from __future__ import annotations

import re

MAX_TERMS = 32
_WORD = re.compile(r"[^\W_]+")
# Postgres's english.stop, as one text.
_STOP_TEXT = """i me my myself we our ours ourselves you your yours yourself yourselves he him
    his himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def query_terms(query: str) -> list[str]:
    """The words of `query` a search looks for, in the order first given."""
    terms: list[str] = []
    for match in _WORD.finditer(query.lower()):
        word = match.group()
        if word not in STOP_WORDS and word not in terms:
            terms.append(word)
            if len(terms) == MAX_TERMS:
                break
    return terms


def fts5_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression for any of `terms`: each a quoted string (a double quote
    inside doubled), so that no word is read as an operator (AND, OR, NOT, NEAR), a column
    filter or a prefix, and no query can be a syntax error."""
    return " OR ".join('"{}"'.format(term.replace('"', '""')) for term in terms)
