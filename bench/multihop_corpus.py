"""What each question of the multi-hop benchmark searches, in its two settings.

- `distractor`: the question's own paragraphs (HotpotQA's distractor setting: the gold ones
  and the distractors given with them), one small index a question.
- `pooled`: every paragraph of every question in the data file (all its lines, not only the
  questions run), each (title, text) once, in one index that every question searches: a
  miniature of HotpotQA's full-wiki setting, where a query can miss and another query matters.
  The index is built once per benchmark process (`pooled_tool`).

Either way a passage keeps its title and sentence ids, and each question's supporting facts
are named by the corpus's document ids (`QuestionCorpus.gold_facts`), so supporting-fact
scoring reads the same in both settings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from langchain_core.tools import BaseTool

from agents.grounding.verify import Citation
from bench.multihop_data import CorpusDocument, Paragraph, Question, documents, paragraph_document
from tools.local_corpus import URL_SCHEME, corpus_tool, index_corpus
from tools.runtime import ToolRuntime

Setting = Literal["distractor", "pooled"]
SETTINGS: tuple[Setting, ...] = ("distractor", "pooled")
LABELS: dict[str, str] = {
    "distractor": "distractor setting",
    "pooled": "open-corpus setting",
}
"""How the results and the page name each setting."""

POOLED_DESCRIPTION = (
    "Search a collection of encyclopaedia paragraphs, offline. Input: keywords, such as a "
    "person's, a work's or a place's name. Returns up to {k} best-matching passages, each with "
    "its title."
)

ToolFor = Callable[[ToolRuntime], BaseTool]
"""One run's tool over a corpus, given the run's own runtime (its own cache and limits)."""

_Key = tuple[str, str]  # (title, text): what makes two paragraphs one in the pool


def _key(paragraph: Paragraph) -> _Key:
    return paragraph.title, "".join(paragraph.sentences)


def pooled_tool(documents: Sequence[CorpusDocument], k: int) -> ToolFor:
    """The pooled setting's tool over `documents`, indexed here, once: called with a run's
    runtime, it gives that run's tool. The one place that says which tool serves the pool
    (the project's local corpus tool)."""
    corpus = index_corpus(documents)
    description = POOLED_DESCRIPTION.format(k=k)
    return lambda runtime: corpus_tool(corpus, runtime, k=k, description=description)


@dataclass(frozen=True)
class Pool:
    """Every paragraph of a data file once, with the id each (title, text) has in the pool."""

    documents: tuple[CorpusDocument, ...]
    ids: Mapping[_Key, str]
    texts: Mapping[str, str]
    """Each document's text by its id (what the independent quote check reads)."""

    @classmethod
    def of(cls, questions: Sequence[Question]) -> Pool:
        """The pool of `questions`' paragraphs, in the order they first appear. A paragraph
        is named by its title; where two different paragraphs share a title, by the title
        and its rank among them (`Title #2`)."""
        first: dict[_Key, Paragraph] = {}
        for question in questions:
            for paragraph in question.context:
                # The same (title, text) never comes with two sentence splits in the shared
                # files; the first one's sentence ids stand for every copy.
                first.setdefault(_key(paragraph), paragraph)
        titles = Counter(title for title, _ in first)
        ranks: Counter[str] = Counter()
        ids: dict[_Key, str] = {}
        for title, text in first:
            ranks[title] += 1
            ids[title, text] = title if titles[title] == 1 else f"{title} #{ranks[title]}"
        docs = tuple(paragraph_document(p, ids[key]) for key, p in first.items())
        return cls(documents=docs, ids=ids, texts={d.doc_id: d.text for d in docs})


def corpus_doc(url: str) -> str | None:
    """The document a source URL of the local corpus tool names (`corpus://<doc_id>`)."""
    return unquote(url.removeprefix(URL_SCHEME)) if url.startswith(URL_SCHEME) else None


def cited_facts(citations: Iterable[Citation]) -> list[tuple[str, int]]:
    """The (document id, sent_id) pairs the verified citations of the local corpus tool's
    passages quote (their sentence ids), in order, each once."""
    facts: list[tuple[str, int]] = []
    for citation in citations:
        doc_id = corpus_doc(citation["source"]["url"])
        if doc_id is None:
            continue
        for sent_id in citation["sent_ids"]:
            if (doc_id, sent_id) not in facts:
                facts.append((doc_id, sent_id))
    return facts


@dataclass(frozen=True)
class QuestionCorpus:
    """What one question searches in one setting, its gold facts named as the corpus names
    its documents, and how a source URL and a citation are read back as those names."""

    setting: Setting
    tool: ToolFor
    gold_facts: tuple[tuple[str, int], ...]
    texts: Mapping[str, str]
    doc_of: Callable[[str], str | None] = corpus_doc
    facts_of: Callable[[Iterable[Citation]], list[tuple[str, int]]] = cited_facts

    @property
    def gold_documents(self) -> set[str]:
        """The documents that hold a supporting fact."""
        return {doc_id for doc_id, _ in self.gold_facts}


def distractor_corpus(question: Question, k: int) -> QuestionCorpus:
    """The question's own paragraphs, indexed for one run at a time."""
    docs = documents(question)
    corpus = index_corpus(docs)
    return QuestionCorpus(
        setting="distractor",
        tool=lambda runtime: corpus_tool(corpus, runtime, k=k),
        gold_facts=question.supporting_facts,
        texts={d.doc_id: d.text for d in docs},
    )


def pooled_corpus(
    question: Question,
    pool: Pool,
    tool: ToolFor,
    doc_of: Callable[[str], str | None] = corpus_doc,
    facts_of: Callable[[Iterable[Citation]], list[tuple[str, int]]] = cited_facts,
) -> QuestionCorpus:
    """The pool's one tool, with `question`'s supporting facts named by the pool's ids (and
    the tool's URLs and citations read back as those by `doc_of` and `facts_of`)."""
    pool_id = {p.id: pool.ids[_key(p)] for p in question.context}
    facts = tuple(
        (pool_id.get(doc_id, doc_id), sent_id) for doc_id, sent_id in question.supporting_facts
    )
    return QuestionCorpus("pooled", tool, facts, pool.texts, doc_of, facts_of)
