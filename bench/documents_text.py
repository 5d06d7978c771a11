"""Generated text for the documents benchmark (bench/documents.py): documents and PDF pages whose
word frequencies follow Zipf's law over a real vocabulary, so that a search's common words are as
common as in real text and its rare ones as rare. Pure and seeded: the same seed gives the same
text on every machine.

The vocabulary is the pooled HotpotQA paragraphs' words ranked by their count there (the most
common first: "the", "of", "and", … "film", "american", …), extended with made-up words to
`VOCABULARY` words, as a larger corpus's long tail would be. A word of rank r is drawn with
probability proportional to 1 / (r + 2.7) (Zipf-Mandelbrot, the fit usual for English), and a
paragraph is as long as a pool paragraph drawn at random.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.store.query_words import STOP_WORDS

VOCABULARY = 60_000
ZIPF_SHIFT = 2.7
ZIPF_EXPONENT = 1.0
_WORD = re.compile(r"[^\W_]+")
_SYLLABLES = tuple(c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou")
LINE_CHARS = 90  # a PDF line, about what a page of 11-point Helvetica holds
PAGE_LINES = 48


def ranked_words(texts: Sequence[str]) -> list[str]:
    """The words of `texts`, lower-cased, most common first (ties in alphabetical order)."""
    counts = Counter(word for text in texts for word in _WORD.findall(text.lower()))
    return sorted(counts, key=lambda word: (-counts[word], word))


def made_up_words(count: int, taken: set[str], seed: int) -> list[str]:
    """`count` pronounceable words of two to four syllables, none of them in `taken`."""
    draw = random.Random(seed)
    words: list[str] = []
    seen = set(taken)
    while len(words) < count:
        word = "".join(draw.choice(_SYLLABLES) for _ in range(draw.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class TextMaker:
    """Paragraphs, documents and PDF pages of Zipf-distributed words, from one seeded stream."""

    words: tuple[str, ...]
    paragraph_words: tuple[int, ...]
    seed: int

    def __post_init__(self) -> None:
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = 1.0 / (ranks + ZIPF_SHIFT) ** ZIPF_EXPONENT
        self._cumulative: npt.NDArray[np.float64] = np.cumsum(weights) / weights.sum()
        self._random = np.random.Generator(np.random.PCG64(self.seed))
        self._vocabulary = np.array(self.words, dtype=object)

    @classmethod
    def from_texts(cls, texts: Sequence[str], seed: int, size: int = VOCABULARY) -> TextMaker:
        """A maker whose vocabulary and paragraph lengths are those of `texts`."""
        real = ranked_words(texts)
        extra = made_up_words(max(0, size - len(real)), set(real) | STOP_WORDS, seed)
        lengths = tuple(max(1, len(_WORD.findall(text))) for text in texts)
        return cls(words=tuple(real + extra)[:size], paragraph_words=lengths, seed=seed)

    def _draw(self, count: int) -> list[str]:
        picks = np.searchsorted(self._cumulative, self._random.random(count), side="right")
        picks = np.minimum(picks, len(self.words) - 1)
        return list(self._vocabulary[picks])

    def _sentences(self, words: list[str]) -> Iterator[str]:
        at = 0
        while at < len(words):
            length = int(self._random.integers(8, 25))
            sentence = words[at : at + length]
            at += length
            yield sentence[0].capitalize() + " " + " ".join(sentence[1:]) + "."

    def paragraph(self) -> str:
        """A paragraph as long as one of the pool's, in sentences."""
        length = self.paragraph_words[int(self._random.integers(len(self.paragraph_words)))]
        return " ".join(self._sentences(self._draw(length)))

    def document(self, paragraphs: int) -> str:
        """A text document of `paragraphs` paragraphs, a blank line between two."""
        return "\n\n".join(self.paragraph() for _ in range(paragraphs))

    def pdf_pages(self, pages: int) -> list[list[str]]:
        """The lines of `pages` full pages of text, for testkit.pdfs.text_pdf (ASCII words only:
        its one font shows no others)."""
        out: list[list[str]] = []
        for _ in range(pages):
            # More words than a page holds (a word and its space take 6 characters or so).
            text = " ".join(self._sentences(self._draw(PAGE_LINES * LINE_CHARS // 5)))
            lines: list[str] = []
            line = ""
            for word in filter(str.isascii, text.split(" ")):
                if line and len(line) + 1 + len(word) > LINE_CHARS:
                    lines.append(line)
                    line = ""
                    if len(lines) == PAGE_LINES:
                        break
                line = f"{line} {word}" if line else word
            out.append(lines)
        return out
