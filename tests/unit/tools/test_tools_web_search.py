"""`web_search` through an injected search function raising ddgs's real exception classes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from tests.support.tool_fixtures import without_shown_passages
from tools.registry import ToolOverrides, build_tools
from tools.runtime import LimiterRegistry, TtlCache
from tools.web_search import classify_ddgs_error, parse_results

DOCS_URL = "https://langchain-ai.github.io/langgraph/"
REPO_URL = "https://github.com/langchain-ai/langgraph"
RESULTS = [
    {"title": "LangGraph docs", "href": DOCS_URL, "body": "Build"},
    {"title": "LangGraph repo", "href": REPO_URL, "body": "Code"},
]


class FakeSearch:
    """Plays ddgs: returns canned results or raises the scripted exceptions first."""

    def __init__(self, *outcomes: Exception | list[dict[str, Any]]) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, query: str, *, region: str, safesearch: str, max_results: int, backend: str
    ) -> list[dict[str, Any]]:
        self.calls.append(
            {
                "query": query,
                "region": region,
                "safesearch": safesearch,
                "max_results": max_results,
                "backend": backend,
            }
        )
        outcome = self.outcomes.pop(0) if self.outcomes else RESULTS
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.fixture
def build(make_settings, clock):
    def make(search: FakeSearch, **fields: Any):
        settings = make_settings(tools=["web_search"], **fields)
        overrides = ToolOverrides(
            web_search_fn=search, clock=clock, sleep=clock.sleep, jitter=lambda: 0.5
        )
        [tool] = build_tools(settings, overrides=overrides)
        return tool

    return make


async def test_results_become_numbered_text_and_sources(build, call_tool) -> None:
    message = await call_tool(build(FakeSearch()), {"query": "langgraph"})

    assert without_shown_passages(message) == {
        "ok": True,
        "error_kind": None,
        "sources": [
            {"title": "LangGraph docs", "url": "https://langchain-ai.github.io/langgraph/"},
            {"title": "LangGraph repo", "url": "https://github.com/langchain-ai/langgraph"},
        ],
    }
    assert message.content.startswith('web_search results for "langgraph":')
    assert "[1] LangGraph docs\nhttps://langchain-ai.github.io/langgraph/\nBuild" in message.content


async def test_settings_reach_the_search_function(build, call_tool) -> None:
    search = FakeSearch()
    tool = build(
        search,
        web_search_backend="duckduckgo",
        web_search_region="de-de",
        web_search_safesearch="off",
        web_search_max_results=7,
    )

    await call_tool(tool, {"query": "  langgraph   sse "})

    assert search.calls == [
        {
            "query": "langgraph sse",
            "region": "de-de",
            "safesearch": "off",
            "max_results": 7,
            "backend": "duckduckgo",
        }
    ]


async def test_no_more_results_than_configured_are_shown(build, call_tool) -> None:
    many = [{"title": f"R{i}", "href": f"https://r.example/{i}", "body": "b"} for i in range(9)]

    message = await call_tool(build(FakeSearch(many), web_search_max_results=3), {"query": "q"})

    assert [s["url"] for s in message.artifact["sources"]] == [
        "https://r.example/0",
        "https://r.example/1",
        "https://r.example/2",
    ]


async def test_rate_limit_is_retried_then_answered(build, call_tool, clock) -> None:
    search = FakeSearch(RatelimitException("202 Ratelimit"))

    message = await call_tool(build(search), {"query": "q"})

    assert len(search.calls) == 2
    assert message.artifact["ok"] is True
    assert clock.sleeps == [0.25]


async def test_persistent_rate_limit_becomes_an_observation(build, call_tool) -> None:
    search = FakeSearch(*[RatelimitException("202 Ratelimit") for _ in range(5)])

    message = await call_tool(build(search, tool_max_retries=2), {"query": "q"})

    assert len(search.calls) == 3
    assert message.content == "web_search: rate limited, try a different query or tool"
    assert message.artifact == {"ok": False, "error_kind": "rate_limited", "sources": []}


async def test_ddgs_timeout_is_a_timeout(build, call_tool) -> None:
    search = FakeSearch(*[TimeoutException("timed out") for _ in range(3)])

    message = await call_tool(build(search, tool_max_retries=2), {"query": "q"})

    assert message.artifact["error_kind"] == "timeout"
    assert len(search.calls) == 3


async def test_no_results_found_is_an_empty_success(build, call_tool) -> None:
    search = FakeSearch(DDGSException("No results found."))

    message = await call_tool(build(search), {"query": "zzqxv"})

    assert message.artifact == {"ok": True, "error_kind": "no_results", "sources": []}
    assert message.content.startswith('web_search: no results for "zzqxv"')
    assert len(search.calls) == 1


async def test_an_empty_list_is_an_empty_success(build, call_tool) -> None:
    message = await call_tool(build(FakeSearch([])), {"query": "q"})

    assert message.artifact["error_kind"] == "no_results"


async def test_results_without_links_are_a_bad_response(build, call_tool) -> None:
    broken: list[dict[str, Any]] = [{"title": "no link"}, {"href": "javascript:alert(1)"}]

    message = await call_tool(build(FakeSearch(broken)), {"query": "q"})

    assert message.artifact == {"ok": False, "error_kind": "bad_response", "sources": []}


async def test_a_bug_in_the_search_function_never_raises_into_the_agent(build, call_tool) -> None:
    message = await call_tool(build(FakeSearch(ZeroDivisionError("x"))), {"query": "q"})

    assert message.artifact["error_kind"] == "internal"
    assert message.content.startswith("web_search: ")


async def test_a_hanging_search_times_out(build, call_tool) -> None:
    release = threading.Event()
    calls: list[str] = []

    def hang(query: str, **_: Any) -> list[dict[str, Any]]:
        calls.append(query)
        release.wait(timeout=10)
        return RESULTS

    try:
        message = await call_tool(build(hang, tool_timeout_s=0.05), {"query": "q"})
    finally:
        release.set()

    assert message.artifact == {"ok": False, "error_kind": "timeout", "sources": []}
    assert calls == ["q"]


async def test_identical_queries_are_answered_from_the_cache(build, call_tool) -> None:
    search = FakeSearch()
    tool = build(search)

    first = await call_tool(tool, {"query": "LangGraph"})
    second = await call_tool(tool, {"query": "langgraph "})

    assert len(search.calls) == 1
    assert second.content == first.content
    assert second.artifact == first.artifact


async def test_tools_built_for_different_runs_share_the_process_rate_limit(
    make_settings, call_tool, clock
) -> None:
    # One registry for both runs, as the process-wide default is, on the fake clock so that
    # nothing sleeps for real.
    process_limiters = LimiterRegistry(clock=clock, sleep=clock.sleep)
    settings = make_settings(tools=["web_search"], tool_min_interval_s=2.0)
    overrides = ToolOverrides(web_search_fn=FakeSearch(), cache=TtlCache(clock=clock))
    [first_run_tool] = build_tools(settings, overrides=overrides, limiters=process_limiters)
    [second_run_tool] = build_tools(settings, overrides=overrides, limiters=process_limiters)

    await call_tool(first_run_tool, {"query": "one"})
    await call_tool(second_run_tool, {"query": "two"})

    assert clock.sleeps == [2.0]


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        (RatelimitException("x"), "rate_limited", True),
        (TimeoutException("x"), "timeout", True),
        (DDGSException("https://html.duckduckgo.com/html 202 Ratelimit"), "rate_limited", True),
        (DDGSException("TimeoutError: request timed out"), "timeout", True),
        (DDGSException("DNSError: error resolving DNS"), "network", False),
        (DDGSException("ConnectError: connection refused"), "network", False),
        (DDGSException("something else"), "http_error", False),
        (KeyError("x"), "internal", False),
    ],
)
def test_ddgs_errors_are_classified(error: Exception, kind: str, retryable: bool) -> None:
    classified = classify_ddgs_error(error)

    assert (classified.kind, classified.retryable) == (kind, retryable)


def test_parse_results_skips_entries_without_a_web_link() -> None:
    raw = [{"title": "a"}, "junk", {"href": "https://ok.example/", "body": 3}]

    hits = parse_results(raw)

    assert [(h.title, h.url, h.text) for h in hits] == [
        ("https://ok.example/", "https://ok.example/", "")
    ]
