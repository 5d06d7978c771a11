"""The `local_docs` tool: passages of the deployment's folder recorded as evidence at
`local://<path in the folder>` (with the page of a paged document); what it does as every
passage tool does is tests/unit/tools/test_tools_passage_tools.py."""

from __future__ import annotations

from typing import Any

from tests.support.passage_search import ListedSearch, answer
from tests.support.tool_fixtures import clocked_runtime
from tools.local_docs import NAME, build_local_docs, folder_url


def test_a_file_is_cited_by_its_path_in_the_folder_and_its_page() -> None:
    assert folder_url("ops/guide.pdf", 3) == "local://ops/guide.pdf#page=3"
    assert folder_url("notes/cats.txt", None) == "local://notes/cats.txt"
    assert folder_url("my notes/a#b.md", None) == "local://my%20notes/a%23b.md"


async def test_a_query_matching_nothing_is_an_empty_success(clock: Any) -> None:
    tool = build_local_docs(ListedSearch([]), clocked_runtime(clock, NAME))

    _, artifact = await answer(tool, "kubernetes")

    assert artifact == {"ok": True, "error_kind": "no_results", "sources": []}
