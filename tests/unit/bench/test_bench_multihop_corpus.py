"""The corpora of the multi-hop benchmark: each question's own paragraphs, or one pool of every
question's paragraphs that every question searches."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from bench.multihop_corpus import Pool, distractor_corpus, pooled_corpus, pooled_tool
from bench.multihop_data import Question, parse_question
from tests.support.tool_fixtures import FakeClock, clocked_runtime

SHARED = ["Leeds", ["Leeds is a city in England.", " It has a university."]]
FIRST: dict[str, Any] = {
    "id": "q1",
    "question": "Which city did Ann Smith live in?",
    "answer": "Leeds",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": [["Ann Smith", 0], ["Leeds", 0]],
    "context": [["Ann Smith", ["Ann Smith was a novelist from Leeds."]], SHARED],
}
SECOND: dict[str, Any] = {
    "id": "q2",
    "question": "Where is the Kirkstall Abbey?",
    "answer": "Leeds",
    "type": "bridge",
    "level": None,
    "supporting_facts": [["Kirkstall Abbey", 0], ["Leeds", 1]],
    "context": [
        ["Kirkstall Abbey", ["Kirkstall Abbey is a ruined monastery in Leeds."]],
        SHARED,
        # Another paragraph under a title the first question uses for a different one.
        ["Ann Smith", ["Ann Smith was a Welsh singer."]],
    ],
}


def _questions() -> list[Question]:
    return [parse_question(json.dumps(line)) for line in (FIRST, SECOND)]


async def _search(tool: BaseTool, query: str) -> list[str]:
    call = {"name": tool.name, "args": {"query": query}, "id": "call-1", "type": "tool_call"}
    message = await tool.ainvoke(call)
    assert isinstance(message, ToolMessage)
    return [passage["doc_id"] for passage in message.artifact["passages"]]


def test_the_pool_holds_each_paragraph_of_every_question_once() -> None:
    pool = Pool.of(_questions())

    assert [d.doc_id for d in pool.documents] == [
        "Ann Smith #1",
        "Leeds",
        "Kirkstall Abbey",
        "Ann Smith #2",
    ]
    # A paragraph keeps its title and its sentences, so that a citation names one of them.
    [leeds] = [d for d in pool.documents if d.doc_id == "Leeds"]
    assert leeds.title == "Leeds"
    assert [leeds.text[s.start : s.end] for s in leeds.sentences] == SHARED[1]


def test_a_question_s_gold_facts_are_named_as_the_pool_names_its_paragraphs() -> None:
    first, second = _questions()
    pool = Pool.of([first, second])
    tool = pooled_tool(pool.documents, k=5)

    assert pooled_corpus(first, pool, tool).gold_facts == (("Ann Smith #1", 0), ("Leeds", 0))
    assert pooled_corpus(second, pool, tool).gold_facts == (("Kirkstall Abbey", 0), ("Leeds", 1))
    assert pooled_corpus(first, pool, tool).setting == "pooled"


async def test_a_question_finds_another_question_s_paragraph_in_the_pool() -> None:
    first, second = _questions()
    pool = Pool.of([first, second])
    corpus = pooled_corpus(first, pool, pooled_tool(pool.documents, k=5))
    tool = corpus.tool(clocked_runtime(FakeClock(), "local_corpus", max_chars=3000))

    shown = await _search(tool, "Kirkstall Abbey monastery")

    assert shown[0] == "Kirkstall Abbey"


async def test_in_the_distractor_setting_a_question_finds_only_its_own_paragraphs() -> None:
    first, _ = _questions()
    corpus = distractor_corpus(first, 5)
    tool = corpus.tool(clocked_runtime(FakeClock(), "local_corpus", max_chars=3000))

    assert "Kirkstall Abbey" not in await _search(tool, "Kirkstall Abbey monastery Leeds")
    assert corpus.gold_facts == first.supporting_facts
    assert set(corpus.texts) == {"Ann Smith", "Leeds"}


async def test_every_run_gets_a_tool_of_its_own_over_the_one_index() -> None:
    pool = Pool.of(_questions())
    tool_for = pooled_tool(pool.documents, k=2)
    clock = FakeClock()

    one, two = (tool_for(clocked_runtime(clock, "local_corpus")) for _ in range(2))

    assert one is not two
    assert await _search(one, "Leeds university") == await _search(two, "Leeds university")
    assert len(await _search(one, "Ann Smith Leeds")) == 2
