"""The words a search matches, taken from a user's query and from a passage's text the same way
for both backends. Pure.

A query is plain words, never a query language: every run of letters and digits is a word,
lower-cased, its accents dropped ("Rodríguez" is "rodriguez"), English stop words left out
(Postgres's `english` list: a stop word is in nearly every passage and ranks next to nothing),
and stemmed by the Snowball English stemmer (the one Postgres's `english` configuration uses:
"films" and "filmed" are "film"). A query's words are each kept once, at most `MAX_TERMS` of
them; a passage's are counted (`passage_words`). A passage matches a query when it holds any
of its words, and ranks higher the more of them, and the rarer, it holds (app/store/ranking.py).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter

import Stemmer  # type: ignore[import-not-found]  # PyStemmer is a C extension without stubs

MAX_TERMS = 32
MAX_WORD_CHARS = 64
"""A longer run of letters and digits (an encoded blob, a hash) is not a word anyone searches."""
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
_stemmers = threading.local()  # a Snowball stemmer keeps state: one per thread


def _stem(words: list[str]) -> list[str]:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return list(stemmer.stemWords(words))


def _words(text: str) -> list[str]:
    """`text`'s words in order, stop words and overlong runs left out, not yet stemmed."""
    folded = unicodedata.normalize("NFKD", text.lower())
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    return [
        word
        for word in _WORD.findall(folded)
        if word not in STOP_WORDS and len(word) <= MAX_WORD_CHARS
    ]


def query_terms(query: str) -> list[str]:
    """The words of `query` a search looks for (stemmed), each once, in the order first given."""
    return list(dict.fromkeys(_stem(_words(query))))[:MAX_TERMS]


def passage_words(text: str) -> Counter[str]:
    """How often each word (stemmed) is in a passage's `text`."""
    return Counter(_stem(_words(text)))
