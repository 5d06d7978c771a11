"""`local_docs`: BM25 (bm25s) over the `.md`/`.txt` files of a configured folder, offline.

Files are split into passages of about `PASSAGE_CHARS` (a heading starts a new passage), and the
index is built once per folder and content: `load_index` reuses it until a file changes.
`LocalDocsIndex.from_documents` indexes documents held in memory instead, one passage each
(`tools.local_corpus` builds a tool over such an index).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import bm25s  # type: ignore[import-untyped]  # bm25s ships no type information
import Stemmer  # type: ignore[import-not-found]  # PyStemmer is a C extension without stubs
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.results import Hit, ToolResult, render_hits
from tools.runtime import ToolCallError, ToolRuntime

logger = logging.getLogger(__name__)

NAME = "local_docs"
SUFFIXES = frozenset({".md", ".txt"})
MAX_FILE_BYTES = 2_000_000
PASSAGE_CHARS = 1200
MAX_PASSAGES = 5
DOCUMENT_MAX_CHARS = 8000
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")

Fingerprint = tuple[tuple[str, int, int], ...]


class LocalDocsInput(BaseModel):
    """Arguments of `local_docs`."""

    query: str = Field(description="Keywords to look for in the private documents.")


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


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of one file, or one in-memory document.

    `path` is the file relative to the folder, in POSIX form, or the document's `doc_id`;
    `sentences` are spans into `text` (only for documents that carry them).
    """

    path: str
    title: str
    text: str
    sentences: tuple[SentenceSpan, ...] = ()


class LocalDocsIndex:
    """A BM25 index over the passages of one folder (or of documents held in memory, `folder`
    None); `search` is safe to call from threads."""

    def __init__(
        self, folder: Path | None, passages: list[Passage], fingerprint: Fingerprint
    ) -> None:
        self.folder = folder
        self.passages = passages
        self.fingerprint = fingerprint
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
    def build(cls, folder: Path) -> LocalDocsIndex:
        """Read every `.md`/`.txt` file under `folder` (hidden ones skipped) and index it."""
        files = doc_files(folder)
        passages: list[Passage] = []
        for path in files:
            relative = path.relative_to(folder).as_posix()
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                logger.warning("local_docs: cannot read %s: %s", relative, exc)
                continue
            passages.extend(split_passages(relative, text))
        logger.info(
            "local_docs: indexed %s passages from %s files in %s", len(passages), len(files), folder
        )
        return cls(folder, passages, fingerprint(folder, files))

    @classmethod
    def from_documents(
        cls, documents: Sequence[CorpusDocument], max_chars: int = DOCUMENT_MAX_CHARS
    ) -> LocalDocsIndex:
        """Index each document as one passage, in order (`passages[i]` is `documents[i]`).

        A document is never split; one longer than `max_chars` is cut after its last whole
        sentence that fits. Raises ValueError when two documents share a `doc_id`.
        """
        repeated = sorted(
            doc_id for doc_id, n in Counter(d.doc_id for d in documents).items() if n > 1
        )
        if repeated:
            raise ValueError(f"documents share an id: {', '.join(map(repr, repeated))}")
        return cls(None, [document_passage(d, max_chars) for d in documents], ())

    def search(self, query: str, k: int = MAX_PASSAGES) -> list[tuple[Passage, float]]:
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
        found: list[tuple[Passage, float]] = []
        for index, score in zip(documents[0].tolist(), scores[0].tolist(), strict=True):
            if score > 0:
                found.append((self.passages[index], float(score)))
        return found


def doc_files(folder: Path) -> list[Path]:
    """The indexable files under `folder`, sorted; hidden files and folders are skipped."""
    files: list[Path] = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.suffix.lower() not in SUFFIXES or not path.is_file():
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            logger.warning("local_docs: skipping %s (over %s bytes)", relative, MAX_FILE_BYTES)
            continue
        files.append(path)
    return sorted(files)


def fingerprint(folder: Path, files: list[Path] | None = None) -> Fingerprint:
    """Name, size and modification time of every indexable file: changes when the corpus does."""
    entries: list[tuple[str, int, int]] = []
    for path in doc_files(folder) if files is None else files:
        stat = path.stat()
        entries.append((path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns))
    return tuple(entries)


def split_passages(path: str, text: str, max_chars: int = PASSAGE_CHARS) -> list[Passage]:
    """Split a file into passages: paragraphs packed up to `max_chars`, a new one per heading.

    A passage's title is the file's first heading (or its name) plus the section heading.
    """
    doc_title = Path(path).stem
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            doc_title = match.group(1)
            break
    passages: list[Passage] = []
    section = ""
    chunk: list[str] = []

    def flush() -> None:
        body = "\n\n".join(chunk).strip()
        chunk.clear()
        if not body:
            return
        title = f"{doc_title} > {section}" if section and section != doc_title else doc_title
        for start in range(0, len(body), max_chars):
            passages.append(Passage(path=path, title=title, text=body[start : start + max_chars]))

    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        heading = _HEADING.match(paragraph.splitlines()[0])
        if heading:
            flush()
            section = heading.group(1)
            paragraph = "\n".join(paragraph.splitlines()[1:]).strip()
            if not paragraph:
                continue
        if chunk and sum(len(c) + 2 for c in chunk) + len(paragraph) > max_chars:
            flush()
        chunk.append(paragraph)
    flush()
    return passages


def document_passage(document: CorpusDocument, max_chars: int = DOCUMENT_MAX_CHARS) -> Passage:
    """`document` as one passage, cut after its last whole sentence within `max_chars` (or at
    `max_chars` when even its first sentence is longer) if it is longer."""
    text, sentences = document.text, document.sentences
    if len(text) > max_chars:
        end = max((span.end for span in sentences if span.end <= max_chars), default=0)
        text = text[: end or max_chars]
        sentences = tuple(span for span in sentences if span.end <= len(text))
        logger.info(
            "local_docs: document %r cut from %s to %s characters",
            document.doc_id,
            len(document.text),
            len(text),
        )
    return Passage(path=document.doc_id, title=document.title, text=text, sentences=sentences)


_INDEXES: dict[Path, LocalDocsIndex] = {}
_INDEXES_LOCK = threading.Lock()


def load_index(folder: Path) -> LocalDocsIndex:
    """The process-wide index of `folder`, rebuilt only when its files changed since."""
    folder = folder.resolve()
    with _INDEXES_LOCK:
        index = _INDEXES.get(folder)
        if index is None or index.fingerprint != fingerprint(folder):
            index = LocalDocsIndex.build(folder)
            _INDEXES[folder] = index
        return index


def to_hit(passage: Passage) -> Hit:
    """A passage as a hit; its URL is `local://<path relative to the folder>`."""
    return Hit(
        title=passage.title, url=f"local://{passage.path}", text=passage.text, meta=passage.path
    )


def classify_local_error(exc: Exception) -> ToolCallError:
    """Searching an in-memory index has no expected failure: anything raised is a bug."""
    return ToolCallError("internal", detail=type(exc).__name__)


def build_local_docs(runtime: ToolRuntime, index: LocalDocsIndex) -> BaseTool:
    """The `local_docs` tool over a built index."""

    def fetch(query: str) -> ToolResult:
        found = index.search(query, MAX_PASSAGES)
        hits = [to_hit(passage) for passage, _score in found]
        return render_hits(NAME, query, hits, runtime.max_chars)

    return runtime.query_tool(
        (
            "Search the private document collection configured for this service (Markdown and "
            "text files), offline. Use it first when the question may concern internal or "
            "project-specific material, and to check what those documents say. Input: keywords. "
            f"Returns up to {MAX_PASSAGES} best-matching passages, each with its file path."
        ),
        LocalDocsInput,
        fetch,
        classify_local_error,
    )
