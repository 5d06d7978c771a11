"""The corpus tool: BM25 over one question's paragraphs held in memory, with the passages
shown (text and sentence spans) in its artifact."""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from bench.multihop_data import HOTPOTQA_DEV_100, Question, documents, load
from tests.support.tool_fixtures import CallTool, FakeClock, clocked_runtime
from tools.corpus_index import CorpusDocument, CorpusIndex, SentenceSpan
from tools.local_corpus import build_corpus_tool, corpus_tool, document_url, index_corpus
from tools.runtime import ToolRuntime

QUESTIONS = {q.id: q for q in load(HOTPOTQA_DEV_100)}
CHILDERS = QUESTIONS["5a8133725542995ce29dcbdb"]  # Henry Roth or Robert Erskine Childers?
GOETHEANUM = QUESTIONS["5a87411d5542994846c1cd37"]  # Jörgen Smit; one title has "&amp;"


@pytest.fixture
def runtime(clock: FakeClock) -> ToolRuntime:
    return clocked_runtime(clock, "local_corpus", max_chars=3000)


def _sentences(question: Question) -> dict[str, tuple[str, ...]]:
    return {paragraph.title: paragraph.sentences for paragraph in question.context}


@pytest.mark.parametrize("question", [CHILDERS, GOETHEANUM], ids=lambda q: q.id)
async def test_searching_for_an_entity_finds_its_gold_paragraph(
    runtime: ToolRuntime, call_tool: CallTool, question: Question
) -> None:
    tool = build_corpus_tool(documents(question), runtime)

    for title in {title for title, _ in question.supporting_facts}:
        message = await call_tool(tool, {"query": html.unescape(title)})
        shown = [passage["doc_id"] for passage in message.artifact["passages"]]
        assert title in shown[:3], (title, shown)


async def test_the_best_match_comes_first_with_its_source(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    tool = build_corpus_tool(documents(CHILDERS), runtime)

    message = await call_tool(tool, {"query": "Henry Roth"})

    assert message.artifact["ok"] is True
    assert message.artifact["error_kind"] is None
    assert message.artifact["sources"][0] == {
        "title": "Henry Roth",
        "url": "corpus://Henry%20Roth",
    }
    assert message.artifact["passages"][0]["doc_id"] == "Henry Roth"


async def test_each_passage_text_appears_verbatim_in_what_the_model_reads(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    tool = build_corpus_tool(documents(CHILDERS), runtime)

    message = await call_tool(tool, {"query": "Childers writer nationalist"})

    passages = message.artifact["passages"]
    assert len(passages) == len(message.artifact["sources"]) > 1
    for passage, source in zip(passages, message.artifact["sources"], strict=True):
        assert passage["text"]
        assert passage["text"] in message.content
        assert f"{source['title']}\n{source['url']}\n{passage['text']}" in message.content
        assert passage["url"] == source["url"]


async def test_sentence_spans_slice_the_text_back_to_the_original_sentences(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    tool = build_corpus_tool(documents(CHILDERS), runtime)
    originals = _sentences(CHILDERS)

    message = await call_tool(tool, {"query": "Erskine Childers"})

    for passage in message.artifact["passages"]:
        sentences = originals[passage["doc_id"]]
        sliced = [passage["text"][s["start"] : s["end"]] for s in passage["sentences"]]
        assert sliced == [sentences[s["sent_id"]] for s in passage["sentences"]]
        assert "".join(sliced) == passage["text"]


def _document(doc_id: str, sentences: list[str]) -> CorpusDocument:
    spans, start = [], 0
    for sent_id, sentence in enumerate(sentences):
        spans.append(SentenceSpan(sent_id, start, start + len(sentence)))
        start += len(sentence)
    return CorpusDocument(doc_id, doc_id, "".join(sentences), tuple(spans))


LONG_SENTENCES = [f" Alpha fact number {i} " + "word " * 16 for i in range(10)]  # ~100 chars
FIRST_TOO_LONG = ["Alpha " + "lengthy " * 60, " Short end."]  # a first sentence of 486 chars


async def _one_passage(
    sentences: list[str], runtime: ToolRuntime, call_tool: CallTool
) -> tuple[ToolMessage, dict[str, Any]]:
    """The reply to "alpha" of a corpus of one document of `sentences`, 400 characters at
    most, and the one passage it shows."""
    tool = build_corpus_tool([_document("A", sentences)], replace(runtime, max_chars=400))
    message = await call_tool(tool, {"query": "alpha"})
    [passage] = message.artifact["passages"]
    return message, passage


async def test_a_tight_budget_cuts_a_passage_after_its_last_whole_sentence(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    message, passage = await _one_passage(LONG_SENTENCES, runtime, call_tool)

    count = len(passage["sentences"])
    assert 0 < count < len(LONG_SENTENCES)
    assert passage["text"] == "".join(LONG_SENTENCES[:count])
    assert passage["text"] in message.content
    assert len(message.content) <= 400


async def test_a_first_sentence_longer_than_its_share_is_shortened_and_cites_nothing(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    message, passage = await _one_passage(FIRST_TOO_LONG, runtime, call_tool)

    assert passage["text"].endswith("…")
    assert passage["text"] in message.content
    assert passage["sentences"] == []


async def test_titles_are_shown_unescaped_and_recorded_with_their_ids(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    tool = build_corpus_tool(documents(GOETHEANUM), runtime)

    message = await call_tool(tool, {"query": "Verlag Freies Geistesleben Urachhaus"})

    first = message.artifact["passages"][0]
    assert first["doc_id"] == "Verlag Freies Geistesleben &amp; Urachhaus"
    assert first["title"] == "Verlag Freies Geistesleben & Urachhaus"
    assert "[1] Verlag Freies Geistesleben & Urachhaus\n" in message.content


async def test_a_query_matching_nothing_is_an_empty_success(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    tool = build_corpus_tool(documents(CHILDERS), runtime)

    message = await call_tool(tool, {"query": "zyxwv qqqq"})

    assert message.artifact == {"ok": True, "error_kind": "no_results", "sources": []}


async def test_two_corpora_never_share_cached_answers(
    runtime: ToolRuntime, call_tool: CallTool
) -> None:
    first = build_corpus_tool(documents(CHILDERS), runtime)
    second = build_corpus_tool(documents(GOETHEANUM), runtime)  # the same cache

    one = await call_tool(first, {"query": "Childers"})
    other = await call_tool(second, {"query": "Childers"})

    assert one.artifact["error_kind"] is None
    assert other.artifact["error_kind"] == "no_results"


async def test_tools_over_one_indexed_corpus_answer_alike_from_runtimes_of_their_own(
    clock: FakeClock, call_tool: CallTool
) -> None:
    corpus = index_corpus(documents(CHILDERS))
    one, two = (
        corpus_tool(corpus, clocked_runtime(clock, "local_corpus", max_chars=3000), k=3)
        for _ in range(2)
    )

    first = await call_tool(one, {"query": "Childers"})
    second = await call_tool(two, {"query": "Childers"})

    assert first.content == second.content
    assert first.artifact == second.artifact
    assert len(first.artifact["passages"]) == 3


def test_the_tool_takes_the_name_it_is_given(runtime: ToolRuntime) -> None:
    tool = build_corpus_tool(documents(CHILDERS), runtime, name="paragraphs")

    assert tool.name == "paragraphs"


def test_a_long_document_is_one_passage_cut_after_a_whole_sentence() -> None:
    document = _document("Long", LONG_SENTENCES)

    [passage] = CorpusIndex.from_documents([document], max_chars=450).passages

    assert passage.text == "".join(LONG_SENTENCES[:4])
    assert passage.sentences == document.sentences[:4]


def test_a_document_whose_first_sentence_is_too_long_is_cut_at_the_limit() -> None:
    [passage] = CorpusIndex.from_documents([_document("B", FIRST_TOO_LONG)], 100).passages

    assert passage.text == FIRST_TOO_LONG[0][:100]
    assert passage.sentences == ()


def test_a_short_document_is_never_split() -> None:
    docs = documents(CHILDERS)

    index = CorpusIndex.from_documents(docs)

    assert [p.text for p in index.passages] == [d.text for d in docs]
    assert [p.sentences for p in index.passages] == [d.sentences for d in docs]


def test_documents_sharing_an_id_are_refused() -> None:
    same = CorpusDocument(doc_id="A", title="A", text="x")

    with pytest.raises(ValueError, match="share an id: 'A'"):
        CorpusIndex.from_documents([same, same])


def test_a_sentence_span_outside_the_text_is_refused() -> None:
    with pytest.raises(ValueError, match="outside its 3 characters"):
        CorpusDocument(doc_id="A", title="A", text="abc", sentences=(SentenceSpan(0, 0, 4),))


def test_a_document_with_its_own_url_is_cited_by_it() -> None:
    document = CorpusDocument(doc_id="A b", title="A b", text="x", url="https://example.org/a")

    assert document_url(document) == "https://example.org/a"
    assert document_url(CorpusDocument(doc_id="A b/c", title="", text="")) == "corpus://A%20b%2Fc"
