"""The `local_docs` tool: passages of the deployment's folder shown under their document's title
and page, recorded as evidence at `local://<path in the folder>` (with the page of a paged
document); nothing cached between searches; a store that fails is retried once."""

from __future__ import annotations

from typing import Any

from tests.support.passage_search import Found, ListedSearch, answer
from tests.support.tool_fixtures import clocked_runtime
from tools.local_docs import NAME, build_local_docs, folder_url

GUIDE = Found("c1", "d1", "Deployment guide", 3, "Postgres holds checkpoints.", "ops/guide.pdf")
NOTES = Found("c1", "d2", "notes", None, "The office cats sleep on racks.", "notes/cats.txt")


def test_a_file_is_cited_by_its_path_in_the_folder_and_its_page() -> None:
    assert folder_url("ops/guide.pdf", 3) == "local://ops/guide.pdf#page=3"
    assert folder_url("notes/cats.txt", None) == "local://notes/cats.txt"
    assert folder_url("my notes/a#b.md", None) == "local://my%20notes/a%23b.md"


async def test_passages_are_shown_under_title_and_page_and_recorded_as_evidence(
    clock: Any,
) -> None:
    store = ListedSearch([GUIDE, NOTES])
    tool = build_local_docs(store, clocked_runtime(clock, "anything"), k=3)

    content, artifact = await answer(tool, "checkpoints")

    assert tool.name == NAME
    assert store.queries == [("checkpoints", 3)]
    assert "Deployment guide, p. 3" in content
    assert GUIDE.text in content
    assert artifact["sources"] == [
        {"title": "Deployment guide, p. 3", "url": "local://ops/guide.pdf#page=3"},
        {"title": "notes", "url": "local://notes/cats.txt"},
    ]


async def test_a_query_matching_nothing_is_an_empty_success(clock: Any) -> None:
    tool = build_local_docs(ListedSearch([]), clocked_runtime(clock, NAME))

    _, artifact = await answer(tool, "kubernetes")

    assert artifact == {"ok": True, "error_kind": "no_results", "sources": []}


async def test_nothing_is_cached_so_a_reloaded_folder_is_seen_by_the_next_search(
    clock: Any,
) -> None:
    store: ListedSearch[Found] = ListedSearch([])
    tool = build_local_docs(store, clocked_runtime(clock, NAME))

    _, before = await answer(tool, "cats")
    store.found.append(NOTES)
    _, after = await answer(tool, "cats")

    assert before["error_kind"] == "no_results"
    assert after["sources"] == [{"title": "notes", "url": "local://notes/cats.txt"}]


async def test_a_store_that_drops_its_connection_is_tried_again(clock: Any) -> None:
    flaky = ListedSearch([GUIDE], ConnectionResetError("gone"))
    wrong = ListedSearch([GUIDE], ValueError("a bug"))
    runtime = clocked_runtime(clock, NAME, max_retries=1)

    _, recovered = await answer(build_local_docs(flaky, runtime), "x")
    _, internal = await answer(build_local_docs(wrong, runtime), "x")

    assert (recovered["ok"], len(flaky.queries)) == (True, 2)
    assert (internal["error_kind"], len(wrong.queries)) == ("internal", 1)
