"""`web_search` under a run's source filter: a result outside it never reaches the model, and
filtered results are cached apart from unfiltered ones."""

from __future__ import annotations

from typing import Any

from calls.sources import SOURCE_FILTER, SourceFilter
from tools.registry import ToolOverrides, build_tools

RESULTS = [
    {"title": "Kept", "href": "https://example.com/kept", "body": "kept text"},
    {"title": "Hidden", "href": "https://news.blocked.org/x", "body": "hidden text"},
]


def _search(calls: list[str]) -> Any:
    def search(
        query: str, *, region: str, safesearch: str, max_results: int, backend: str
    ) -> list[dict[str, Any]]:
        calls.append(query)
        return RESULTS

    return search


async def test_an_excluded_domain_is_not_in_the_tool_s_text_nor_its_sources(
    make_settings: Any, clock: Any
) -> None:
    calls: list[str] = []
    overrides = ToolOverrides(web_search_fn=_search(calls), clock=clock, sleep=clock.sleep)
    [tool] = build_tools(make_settings(tools=["web_search"]), overrides=overrides)

    token = SOURCE_FILTER.set(SourceFilter.of(exclude=["blocked.org"]))
    try:
        filtered = await tool.ainvoke(
            {"type": "tool_call", "id": "1", "name": "web_search", "args": {"query": "q"}}
        )
    finally:
        SOURCE_FILTER.reset(token)
    unfiltered = await tool.ainvoke(
        {"type": "tool_call", "id": "2", "name": "web_search", "args": {"query": "q"}}
    )

    assert "kept text" in filtered.content
    assert "blocked.org" not in filtered.content
    assert "hidden text" not in filtered.content
    assert [s["url"] for s in filtered.artifact["sources"]] == ["https://example.com/kept"]
    assert "hidden text" in unfiltered.content  # not served the filtered result from the cache
    assert calls == ["q", "q"]
