"""A search's words, taken from a user's query the same way for both backends, and the FTS5
expression SQLite matches them with. Pure.

A query is plain words, never a query language: every run of letters and digits is a word
(what SQLite's `unicode61` tokenizer and Postgres's parser both split on), lower-cased, each
once, English stop words left out (Postgres's `english` list, so that both backends drop the
same ones; a stop word matches nearly every passage and ranks next to nothing), at most
`MAX_TERMS` of them. A passage matches when it holds any of the words, and ranks higher the
more of them (and the rarer) it holds.

What bounds a search's work: ranking costs a search per passage it ranks, and a common word
(in a third of the passages, say) would have it rank a third of the index. So the passages
ranked are those holding one of the query's rarer words (`split_terms`: the rarest words
while the passages holding them stay within `CANDIDATES`), each ranked by all of the words.
A passage that holds only common words is then found only when fewer than the passages asked
for hold a rarer one: it would rarely have ranked among the best (the rarer words weigh the
most), and the work stays bounded whatever the index's size.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_TERMS = 32
CANDIDATES = 5_000
"""The most passages a search ranks, as counted by its rarer words (see `split_terms`)."""
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


def split_terms(
    terms: Sequence[str], counts: Sequence[int], budget: int = CANDIDATES
) -> tuple[list[str], list[str]]:
    """(rare, common) of `terms`, given how many passages hold each (`counts`; a count may be
    capped just above `budget`): the rarest terms while their counts together stay within
    `budget` (the rarest one at least), and the others; each part in the query's order."""
    if len(terms) != len(counts):
        raise ValueError(f"{len(terms)} terms but {len(counts)} counts")
    rare: set[int] = set()
    total = 0
    for index in sorted(range(len(terms)), key=lambda i: (counts[i], i)):
        if rare and total + counts[index] > budget:
            break
        rare.add(index)
        total += counts[index]
    return (
        [term for i, term in enumerate(terms) if i in rare],
        [term for i, term in enumerate(terms) if i not in rare],
    )
