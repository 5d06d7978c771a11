"""Answer sentences: where a sentence ends, and which citation markers belong to it (the
sentence rule of agents/grounding/verify.py)."""

from __future__ import annotations

import re

MARKER = re.compile(r"\[(\d{1,6})\]")
"""A citation marker in an answer."""

# A sentence ends at a run of ., ! or ?, with any closing quotes or brackets and the markers
# right after it, when whitespace or the end of the text follows.
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019\u00bb)]*(?:\s*\[\d{1,6}\])*(?=\s|$)")
_ABBREVIATIONS = frozenset(
    # A word list reads best as one string.
    "e.g. i.e. cf. vs. al. approx. ca. fig. figs. vol. pp. dr. mr. "  # noqa: SIM905
    "mrs. ms. prof. st. mt. jr. sr. gen. col. lt. sgt. gov. sen. rev. hon.".split()
)
_INITIALISM = re.compile(r"(?:[^\W\d_]\.){2,}|[A-Z]\.")  # U.S., a.m., J. (an initial)
_WORD = re.compile(r"[^\W_]")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, with their markers.

    A sentence ends after `.`, `!` or `?` followed by whitespace or the end, except after an
    abbreviation ("e.g.", "Dr.") or an initialism ("U.S."); a decimal ("3.5") is never an end.
    A line break also ends a sentence. Markers right after the final punctuation ("France.[1]",
    "France. [1]") belong to that sentence; a fragment without a word (markers only) is not a
    sentence, and its markers join the sentence before it (or after it, at the start).
    """
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if _after_abbreviation(text, match):
            continue
        pieces.extend(text[start : match.end()].splitlines())
        start = match.end()
    pieces.extend(text[start:].splitlines())
    sentences: list[str] = []
    carried = ""
    for piece in (p.strip() for p in pieces):
        if not _WORD.search(MARKER.sub("", piece)):
            if piece and sentences:
                sentences[-1] = f"{sentences[-1]} {piece}"
            elif piece:
                carried = f"{carried} {piece}".strip()
            continue
        sentences.append(f"{carried} {piece}".strip())
        carried = ""
    return sentences


def _after_abbreviation(text: str, end: re.Match[str]) -> bool:
    if not end.group().startswith(".") or end.group().startswith(".."):
        return False
    word = text[: end.start() + 1].rsplit(maxsplit=1)[-1].lstrip("\"'([\u201c\u2018")
    return word.casefold() in _ABBREVIATIONS or _INITIALISM.fullmatch(word) is not None
