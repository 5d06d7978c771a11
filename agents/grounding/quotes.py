"""Finding a quote in a passage: text folding with a map back to the original offsets, and the
exact, normalised and fuzzy matches whose rules agents/grounding/verify.py documents."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

MatchKind = Literal["exact", "normalised", "fuzzy"]

_TYPOGRAPHIC = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2035", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043", "-"),
    }
)
_TOKEN = re.compile(r"\S+")
# Tokens that change what a sentence says when one is added, dropped or changed. "t" is what
# "n't" becomes once punctuation is a space ("didn't" -> "didn t").
_NEGATIONS = frozenset(
    # A word list reads best as one string.
    "no not never nor neither none nothing nobody nowhere without cannot t "  # noqa: SIM905
    "cant dont doesnt didnt isnt wasnt arent werent wont hasnt havent hadnt "
    "shouldnt couldnt wouldnt".split()
)


@dataclass(frozen=True, slots=True)
class Folded:
    """A folded text and, for each of its characters, the original range it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original range of the folded range `[start, end)` (non-empty)."""
        return self.starts[start], self.ends[end - 1]


def fold(text: str, *, full: bool) -> Folded:
    """`text` with whitespace collapsed and stripped; with `full`, also NFKC, casefolded,
    typographic quotes and dashes made ASCII, format characters dropped and punctuation
    turned into spaces. A base character and its combining marks fold as one unit."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    gap: tuple[int, int] | None = None
    for start, end in _clusters(text):
        chunk = text[start:end]
        if full:
            chunk = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", chunk).casefold())
            chunk = chunk.translate(_TYPOGRAPHIC)
        for char in chunk:
            category = unicodedata.category(char)
            if full and category == "Cf":
                continue
            if char.isspace() or (full and category.startswith("P")):
                gap = gap or (start, end)
                continue
            if gap is not None and chars:
                chars.append(" ")
                starts.append(gap[0])
                ends.append(gap[1])
            gap = None
            chars.append(char)
            starts.append(start)
            ends.append(end)
    return Folded("".join(chars), tuple(starts), tuple(ends))


def find_quote(
    quote: str, exact_text: Folded, normal_text: Folded
) -> tuple[MatchKind, int, int] | None:
    """The first match of `quote` in a passage folded both ways (`fold(text, full=False)` and
    `fold(text, full=True)`), as (kind, start, end) in the passage's original text."""
    raw = fold(quote, full=False).text
    span = _find_on_word_boundaries(exact_text, raw)
    if span is not None:
        return "exact", *span
    normal = fold(quote, full=True).text
    span = _find_on_word_boundaries(normal_text, normal)
    if span is not None:
        return "normalised", *span
    span = _find_fuzzy(normal.split(), normal_text)
    if span is not None:
        return "fuzzy", *span
    return None


def _clusters(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    while start < len(text):
        end = start + 1
        while end < len(text) and unicodedata.combining(text[end]):
            end += 1
        yield start, end
        start = end


def _find_on_word_boundaries(haystack: Folded, needle: str) -> tuple[int, int] | None:
    """The first occurrence of `needle` that neither starts nor ends inside a word."""
    if not needle:
        return None
    text = haystack.text
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        cuts_before = needle[0].isalnum() and at > 0 and text[at - 1].isalnum()
        cuts_after = needle[-1].isalnum() and end < len(text) and text[end].isalnum()
        if not cuts_before and not cuts_after:
            return haystack.span(at, end)
        at = text.find(needle, at + 1)
    return None


def _find_fuzzy(quote: list[str], text: Folded) -> tuple[int, int] | None:
    """The best window of at most 1.25 x len(quote) tokens of `text` that holds at least 90 %
    of the quote's tokens in order, and exactly the quote's numbers and negations: the one
    with the most quote tokens, then the shortest, then the first.

    For each start token that occurs in the quote (a best window starts at one), the longest
    common subsequence of the quote and the growing window is kept as a bit vector over the
    quote (Hyyrö's bit-parallel form of the LCS table): one step per window token, so the
    search is O(n x 1.25 m) steps on m-bit integers for n text tokens and m quote tokens.
    """
    size = len(quote)
    need = (9 * size + 9) // 10  # ceil(0.9 x size), in integers
    width = 5 * size // 4
    masks: dict[str, int] = {}
    for position, token in enumerate(quote):
        masks[token] = masks.get(token, 0) | (1 << position)
    critical = Counter(token for token in quote if _critical(token))
    spans = [match.span() for match in _TOKEN.finditer(text.text)]
    tokens = [text.text[start:end] for start, end in spans]
    ones = (1 << size) - 1
    best: tuple[int, int, int] | None = None  # (-common tokens, window length, first token)
    for first in range(len(tokens)):
        if tokens[first] not in masks:
            continue
        vector = ones
        seen: Counter[str] = Counter()
        for last in range(first, min(first + width, len(tokens))):
            token = tokens[last]
            if _critical(token):
                seen[token] += 1
            matched = vector & masks.get(token, 0)
            vector = ((vector + matched) | (vector - matched)) & ones
            common = size - vector.bit_count()
            if common >= need and seen == critical:
                key = (-common, last - first, first)
                best = key if best is None or key < best else best
    if best is None:
        return None
    _, length, first = best
    return text.span(spans[first][0], spans[first + length][1])


def _critical(token: str) -> bool:
    return token in _NEGATIONS or any(char.isdigit() for char in token)
