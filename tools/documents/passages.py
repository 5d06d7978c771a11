"""A read document cut into passages: what a search returns and a citation quotes.

Cuts fall on headings (a Markdown `#` line, which the HTML reader also writes) and between
paragraphs; a paragraph longer than a passage is cut between sentences, and a sentence longer
than that at a space. A heading that no text follows on its page (before the next heading or
the page's end) is a passage of its own, so no text of the document is lost. A passage never
spans two pages, so a citation names its page. Each passage has an id stable for the same
content: its page and its number on that page (`p12.3`; `p0.3` for a document without pages),
which the store prefixes with the document's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tools.documents.reading import ReadDocument

PASSAGE_CHARS = 1200
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage: its page (None: the document has no pages), its number on the page (from
    1), the heading it stands under (if any) and its text."""

    page: int | None
    number: int
    heading: str | None
    text: str

    @property
    def local_id(self) -> str:
        return f"p{self.page or 0}.{self.number}"


def passages(document: ReadDocument, max_chars: int = PASSAGE_CHARS) -> list[Passage]:
    """The document's passages, in reading order."""
    out: list[Passage] = []
    heading: str | None = None
    for page in document.pages:
        blocks = _blocks(page.text, heading, max_chars)
        for number, (block_heading, text) in enumerate(blocks, start=1):
            heading = block_heading
            out.append(Passage(page.number, number, heading, text))
    return out


def _blocks(text: str, heading: str | None, max_chars: int) -> Iterator[tuple[str | None, str]]:
    """(heading, passage text) pairs of one page: paragraphs gathered up to `max_chars`, a
    heading starting a new passage (and carried on to the next page)."""
    buffer: list[str] = []
    size = 0
    bare: str | None = None  # a heading of this page that no text has followed yet
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        first, _, rest = paragraph.partition("\n")
        match = _HEADING.match(first)
        if match:
            if buffer:
                yield heading, "\n\n".join(buffer)
                buffer, size = [], 0
            elif bare is not None:
                yield from _alone(bare, max_chars)
            heading = bare = match.group(1)
            paragraph = rest.strip()
            if not paragraph:
                continue
        bare = None
        for piece in _pieces(paragraph, max_chars):
            if buffer and size + len(piece) + 2 > max_chars:
                yield heading, "\n\n".join(buffer)
                buffer, size = [], 0
            buffer.append(piece)
            size += len(piece) + 2
    if buffer:
        yield heading, "\n\n".join(buffer)
    elif bare is not None:
        yield from _alone(bare, max_chars)


def _alone(heading: str, max_chars: int) -> Iterator[tuple[str | None, str]]:
    """A heading that no text follows, as the passages of its own text."""
    for piece in _pieces(heading, max_chars):
        yield heading, piece


def _pieces(paragraph: str, max_chars: int) -> Iterator[str]:
    """A paragraph in pieces of at most `max_chars`: whole if it fits, else cut between
    sentences, and a sentence too long for one piece cut at spaces."""
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    piece = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            if piece:
                yield piece
                piece = ""
            yield sentence[:cut].strip()
            sentence = sentence[cut:].strip()
        if piece and len(piece) + 1 + len(sentence) > max_chars:
            yield piece
            piece = ""
        piece = f"{piece} {sentence}".strip()
    if piece:
        yield piece
