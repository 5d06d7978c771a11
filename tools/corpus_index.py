"""A BM25 index (bm25s, English stemming) over documents held in memory, one passage each.

`tools.local_corpus` builds its tools over it (one question's paragraphs, a benchmark's
corpus). A document is never split; one longer than `DOCUMENT_MAX_CHARS` is cut after its last
whole sentence that fits, so what a search returns is a prefix of the document with the spans
of the sentences in it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import bm25s  # type: ignore[import-untyped]  # bm25s ships no type information
import Stemmer  # type: ignore[import-not-found]  # PyStemmer is a C extension without stubs

from tools.runtime import ToolCallError

logger = logging.getLogger(__name__)

DOCUMENT_MAX_CHARS = 8000
MAX_PASSAGES = 5


class SentenceSpan(NamedTuple):
    """Where sentence `sent_id` of a document lies in its text: `text[start:end]`."""

    sent_id: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class CorpusDocument:
    """A document held in memory: `doc_id` is what evidence names it by, `title` what is shown."""

    doc_id: str
    title: str
    text: str
    sentences: tuple[SentenceSpan, ...] = ()
    url: str = ""
    """Its address where it has one; empty for a document known only by its id."""

    def __post_init__(self) -> None:
        for span in self.sentences:
            if not 0 <= span.start <= span.end <= len(self.text):
                raise ValueError(
                    f"document {self.doc_id!r}: sentence {span.sent_id} spans "
                    f"{span.start}-{span.end}, outside its {len(self.text)} characters"
                )


class CorpusIndex:
    """A BM25 index over documents held in memory, each one passage (cut to a bound);
    `search` is safe to call from threads."""

    def __init__(self, passages: list[CorpusDocument]) -> None:
        self.passages = passages
        # PyStemmer objects must not be used by two threads at once.
        self._lock = threading.Lock()
        self._stemmer = Stemmer.Stemmer("english")
        self._retriever: bm25s.BM25 | None = None
        if passages:
            tokens = bm25s.tokenize(
                [f"{p.title}\n{p.text}" for p in passages],
                stopwords="en",
                stemmer=self._stemmer,
                show_progress=False,
            )
            self._retriever = bm25s.BM25()
            self._retriever.index(tokens, show_progress=False)

    @classmethod
    def from_documents(
        cls, documents: Sequence[CorpusDocument], max_chars: int = DOCUMENT_MAX_CHARS
    ) -> CorpusIndex:
        """Index each document as one passage, in order (`passages[i]` is `documents[i]`).

        A document is never split; one longer than `max_chars` is cut after its last whole
        sentence that fits. Raises ValueError when two documents share a `doc_id`.
        """
        repeated = sorted(
            doc_id for doc_id, n in Counter(d.doc_id for d in documents).items() if n > 1
        )
        if repeated:
            raise ValueError(f"documents share an id: {', '.join(map(repr, repeated))}")
        return cls([document_passage(d, max_chars) for d in documents])

    def search(self, query: str, k: int = MAX_PASSAGES) -> list[tuple[CorpusDocument, float]]:
        """The best `k` passages with a positive score, best first."""
        if self._retriever is None:
            return []
        with self._lock:
            query_tokens = bm25s.tokenize(
                [query],
                stopwords="en",
                stemmer=self._stemmer,
                return_ids=False,
                show_progress=False,
            )
            if not query_tokens or not query_tokens[0]:
                return []
            documents, scores = self._retriever.retrieve(
                query_tokens, k=min(k, len(self.passages)), show_progress=False
            )
        found: list[tuple[CorpusDocument, float]] = []
        for index, score in zip(documents[0].tolist(), scores[0].tolist(), strict=True):
            if score > 0:
                found.append((self.passages[index], float(score)))
        return found


def document_passage(
    document: CorpusDocument, max_chars: int = DOCUMENT_MAX_CHARS
) -> CorpusDocument:
    """`document` as the index holds it, cut after its last whole sentence within `max_chars` (or at
    `max_chars` when even its first sentence is longer) if it is longer."""
    text, sentences = document.text, document.sentences
    if len(text) > max_chars:
        end = max((span.end for span in sentences if span.end <= max_chars), default=0)
        text = text[: end or max_chars]
        sentences = tuple(span for span in sentences if span.end <= len(text))
        logger.info(
            "corpus: document %r cut from %s to %s characters",
            document.doc_id,
            len(document.text),
            len(text),
        )
    return replace(document, text=text, sentences=sentences)


def classify_index_error(exc: Exception) -> ToolCallError:
    """Searching an in-memory index has no expected failure: anything raised is a bug."""
    return ToolCallError("internal", detail=type(exc).__name__)
