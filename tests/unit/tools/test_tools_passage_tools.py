"""What both passage tools (`documents` and `local_docs`, each a `passage_tool`) do alike:
passages shown under their document's title and page and recorded as evidence at the tool's
own address; nothing cached between searches; a store that drops its connection is tried
again once, a store that fails otherwise is not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from tests.support.passage_search import Found, ListedSearch, answer
from tests.support.tool_fixtures import clocked_runtime
from tools import local_docs
from tools.documents import search_tool


@dataclass(frozen=True)
class PassageTool:
    """A passage tool, two passages its store finds for `query`, and the sources it records
    for them."""

    name: str
    build: Callable[..., BaseTool]  # (search, runtime, *, k=its default)
    found: tuple[Found, Found]
    query: str
    sources: list[dict[str, str]]


REPORT = Found("c1", "d1", "Annual report", 2, "Revenue grew to 12 million euros in 2025.")
NOTES = Found("c1", "d2", "Notes", None, "Revenue is counted in euros.")
GUIDE = Found("c1", "d1", "Deployment guide", 3, "Postgres holds checkpoints.", "ops/guide.pdf")
CATS = Found("c1", "d2", "notes", None, "The office cats sleep on racks.", "notes/cats.txt")
TOOLS = [
    PassageTool(
        search_tool.NAME,
        search_tool.build_documents,
        (REPORT, NOTES),
        "revenue",
        [
            {"title": "Annual report, p. 2", "url": "/collections/c1/documents/d1#page=2"},
            {"title": "Notes", "url": "/collections/c1/documents/d2"},
        ],
    ),
    PassageTool(
        local_docs.NAME,
        local_docs.build_local_docs,
        (GUIDE, CATS),
        "checkpoints",
        [
            {"title": "Deployment guide, p. 3", "url": "local://ops/guide.pdf#page=3"},
            {"title": "notes", "url": "local://notes/cats.txt"},
        ],
    ),
]

each_tool = pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])


@each_tool
async def test_passages_are_shown_under_title_and_page_and_recorded_as_evidence(
    clock: Any, tool: PassageTool
) -> None:
    store = ListedSearch(tool.found)
    built = tool.build(store, clocked_runtime(clock, "anything"), k=3)

    content, artifact = await answer(built, tool.query)

    assert built.name == tool.name
    assert store.queries == [(tool.query, 3)]
    assert tool.sources[0]["title"] in content
    assert tool.found[0].text in content
    assert artifact["sources"] == tool.sources
    assert [p["text"] for p in artifact["passages"]] == [found.text for found in tool.found]


@each_tool
async def test_nothing_is_cached_so_a_new_passage_is_found_by_the_next_search(
    clock: Any, tool: PassageTool
) -> None:
    store: ListedSearch[Found] = ListedSearch([])
    built = tool.build(store, clocked_runtime(clock, tool.name))

    _, before = await answer(built, tool.query)
    store.found.append(tool.found[1])
    _, after = await answer(built, tool.query)

    assert before["error_kind"] == "no_results"
    assert after["sources"] == tool.sources[1:]
    assert len(store.queries) == 2


@each_tool
async def test_a_store_that_drops_its_connection_is_tried_again(
    clock: Any, tool: PassageTool
) -> None:
    first = tool.found[:1]
    flaky = ListedSearch(first, ConnectionResetError("gone"))
    broken = ListedSearch(first, ConnectionResetError("gone"), ConnectionResetError("gone"))
    wrong = ListedSearch(first, ValueError("a bug"))
    runtime = clocked_runtime(clock, tool.name, max_retries=1)

    _, recovered = await answer(tool.build(flaky, runtime), tool.query)
    _, failed = await answer(tool.build(broken, runtime), tool.query)
    _, internal = await answer(tool.build(wrong, runtime), tool.query)

    assert (recovered["ok"], len(flaky.queries)) == (True, 2)
    assert (failed["ok"], failed["error_kind"], len(broken.queries)) == (False, "network", 2)
    assert (internal["error_kind"], len(wrong.queries)) == ("internal", 1)
