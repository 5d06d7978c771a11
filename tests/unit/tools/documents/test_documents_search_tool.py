"""The `documents` tool: passages shown under their document's title and page, recorded as
evidence at an address that names the collection, the document and the page; nothing cached
between searches; a store that fails is retried once through the runtime's async path."""

from __future__ import annotations

from typing import Any

from tests.support.passage_search import Found, ListedSearch, answer
from tests.support.tool_fixtures import clocked_runtime
from tools.documents.search_tool import (
    NAME,
    DocumentPlace,
    build_documents,
    cited_title,
    document_place,
    document_url,
)

REPORT = Found("c1", "d1", "Annual report", 2, "Revenue grew to 12 million euros in 2025.")
NOTES = Found("c1", "d2", "Notes", None, "Revenue is counted in euros.")


def test_a_document_address_names_its_collection_document_and_page() -> None:
    paged = DocumentPlace("c1", "d1", 12)
    unpaged = DocumentPlace("c1", "d2", None)

    assert document_url(paged) == "/collections/c1/documents/d1#page=12"
    assert document_url(unpaged) == "/collections/c1/documents/d2"
    assert document_place(document_url(paged)) == paged
    assert document_place(document_url(unpaged)) == unpaged
    assert document_place("https://example.com/collections/c1/documents/d1") is None
    assert document_place("/collections/c1/documents/d1/../x") is None


def test_a_citation_shows_the_title_and_the_page() -> None:
    assert cited_title("Annual report", 12) == "Annual report, p. 12"
    assert cited_title("Notes", None) == "Notes"


async def test_passages_are_shown_under_title_and_page_and_recorded_as_evidence(
    clock: Any,
) -> None:
    store = ListedSearch([REPORT, NOTES])
    tool = build_documents(store, clocked_runtime(clock, "anything"), k=3)

    content, artifact = await answer(tool, "revenue")

    assert tool.name == NAME
    assert store.queries == [("revenue", 3)]
    assert "Annual report, p. 2" in content
    assert REPORT.text in content
    assert artifact["sources"] == [
        {"title": "Annual report, p. 2", "url": "/collections/c1/documents/d1#page=2"},
        {"title": "Notes", "url": "/collections/c1/documents/d2"},
    ]
    assert [p["text"] for p in artifact["passages"]] == [REPORT.text, NOTES.text]


async def test_nothing_is_cached_so_a_new_document_is_found_by_the_next_search(
    clock: Any,
) -> None:
    store: ListedSearch[Found] = ListedSearch([])
    tool = build_documents(store, clocked_runtime(clock, NAME))

    _, before = await answer(tool, "revenue")
    store.found.append(REPORT)
    _, after = await answer(tool, "revenue")

    assert before["error_kind"] == "no_results"
    assert after["sources"][0]["title"] == "Annual report, p. 2"
    assert len(store.queries) == 2


async def test_a_store_that_drops_its_connection_is_tried_again(clock: Any) -> None:
    flaky = ListedSearch([REPORT], ConnectionResetError("gone"))
    broken = ListedSearch([REPORT], ConnectionResetError("gone"), ConnectionResetError("gone"))
    wrong = ListedSearch([REPORT], ValueError("a bug"))
    runtime = clocked_runtime(clock, NAME, max_retries=1)

    _, recovered = await answer(build_documents(flaky, runtime), "revenue")
    _, failed = await answer(build_documents(broken, runtime), "revenue")
    _, internal = await answer(build_documents(wrong, runtime), "revenue")

    assert (recovered["ok"], len(flaky.queries)) == (True, 2)
    assert (failed["ok"], failed["error_kind"], len(broken.queries)) == (False, "network", 2)
    assert (internal["error_kind"], len(wrong.queries)) == ("internal", 1)
