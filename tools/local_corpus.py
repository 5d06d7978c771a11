"""`local_corpus`: BM25 over documents held in memory (one question's paragraphs, say), offline.

The index is `tools.corpus_index` (`CorpusIndex.from_documents`), one passage per document.
`index_corpus` builds it once and `corpus_tool` makes any number of tools over it, each with a
runtime of its own (a large corpus that many runs search is indexed once). A
passage is cut only after a whole sentence, so what the model reads is a prefix of it, and the
artifact's `passages` record each passage shown, its text exactly as shown and the spans of
the whole sentences in it: enough to check later which sentences an answer rests on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from tools.corpus_index import (
    DOCUMENT_MAX_CHARS,
    MAX_PASSAGES,
    CorpusDocument,
    CorpusIndex,
    classify_index_error,
)
from tools.results import (
    Hit,
    PassageRecord,
    ToolArtifact,
    ToolResult,
    layout_hits,
    no_results,
    shorten,
    shown_sources,
)
from tools.runtime import ToolRuntime

NAME = "local_corpus"
URL_SCHEME = "corpus://"


class LocalCorpusInput(BaseModel):
    """Arguments of the corpus tool."""

    query: str = Field(description="Keywords to look for in the documents, e.g. a name.")


@dataclass(frozen=True, slots=True)
class SentenceBody:
    """A passage's text for `layout_hits`: cut after its last whole sentence that fits, so the
    text shown is a prefix of it; shortened like any other body only when no sentence fits."""

    text: str
    ends: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.text)

    def cut(self, max_chars: int) -> str:
        if len(self.text) <= max_chars:
            return self.text
        end = max((end for end in self.ends if end <= max_chars), default=0)
        return self.text[:end] if end > 0 else shorten(self.text, max_chars)


def document_url(document: CorpusDocument) -> str:
    """The document's own URL, or `corpus://<doc_id, percent-encoded>` for one without."""
    return document.url or URL_SCHEME + quote(document.doc_id, safe="")


def corpus_digest(documents: Sequence[CorpusDocument], max_chars: int = DOCUMENT_MAX_CHARS) -> str:
    """A digest of everything in `documents` that can change a search's answer."""
    payload = [
        [d.doc_id, d.title, d.url, d.text, [list(span) for span in d.sentences]] for d in documents
    ]
    encoded = json.dumps([max_chars, payload], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()[:16]


def passage_record(passage: CorpusDocument, url: str, shown: str) -> PassageRecord:
    """What the model was shown of `passage` (`shown`, its body in the tool's content), with
    the spans of the sentences shown whole."""
    whole = bool(shown) and passage.text.startswith(shown)
    return {
        "doc_id": passage.doc_id,
        "title": passage.title,
        "url": url,
        "text": shown,
        "sentences": [
            {"sent_id": span.sent_id, "start": span.start, "end": span.end}
            for span in passage.sentences
            if whole and span.end <= len(shown)
        ],
    }


def render_passages(
    tool: str, query: str, passages: Sequence[CorpusDocument], urls: dict[str, str], max_chars: int
) -> ToolResult:
    """`render_hits` for corpus passages, with the `passages` evidence in the artifact."""
    if not passages:
        return no_results(tool, query)
    hits = [Hit(title=p.title, url=urls[p.doc_id], text=p.text) for p in passages]
    bodies = [SentenceBody(p.text, tuple(span.end for span in p.sentences)) for p in passages]
    layout = layout_hits(tool, query, hits, max_chars, bodies=bodies)
    # `layout.shown` is always the first hits, in order.
    records = [
        passage_record(passage, hit.url, body)
        for passage, (hit, body) in zip(passages, layout.shown, strict=False)
    ]
    artifact: ToolArtifact = {
        "ok": True,
        "error_kind": None,
        "sources": shown_sources(layout),
        "passages": records,
    }
    return layout.content, artifact


@dataclass(frozen=True, slots=True)
class IndexedCorpus:
    """Documents indexed once (`index_corpus`): the index, each document's URL, and the digest
    that keeps two corpora's cached answers apart."""

    index: CorpusIndex
    urls: dict[str, str]
    digest: str


def index_corpus(
    documents: Sequence[CorpusDocument], max_document_chars: int = DOCUMENT_MAX_CHARS
) -> IndexedCorpus:
    """`documents` indexed, one passage each. Raises ValueError for repeated `doc_id`s."""
    return IndexedCorpus(
        index=CorpusIndex.from_documents(documents, max_document_chars),
        urls={document.doc_id: document_url(document) for document in documents},
        digest=corpus_digest(documents, max_document_chars),
    )


def build_corpus_tool(
    documents: Sequence[CorpusDocument], runtime: ToolRuntime, *, name: str = NAME
) -> BaseTool:
    """A search tool named `name` over `documents`, one passage each, at the default sizes
    (`corpus_tool` over `index_corpus(documents)`, which take the others). Raises ValueError
    for repeated `doc_id`s."""
    return corpus_tool(index_corpus(documents), runtime, name=name)


def corpus_tool(
    corpus: IndexedCorpus,
    runtime: ToolRuntime,
    *,
    name: str = NAME,
    k: int = MAX_PASSAGES,
    description: str | None = None,
) -> BaseTool:
    """A search tool named `name` over an indexed corpus.

    Calls go through `runtime` under `name`, with the corpus digest added to its cache scope:
    two corpora never share cached answers.
    """
    runtime = replace(runtime, name=name, scope=f"{runtime.scope}|{corpus.digest}|k={k}")

    def fetch(query: str) -> ToolResult:
        found = corpus.index.search(query, k)
        return render_passages(name, query, [p for p, _ in found], corpus.urls, runtime.max_chars)

    return runtime.query_tool(
        description
        or (
            "Search the documents supplied for this question, offline. Input: keywords, such "
            "as a person's, a work's or a place's name. Returns up to "
            f"{k} best-matching passages, each with its title."
        ),
        LocalCorpusInput,
        fetch,
        classify_index_error,
    )
