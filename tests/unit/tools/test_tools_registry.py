"""`build_tools`: which tools, in what shape, and start-up failures for bad configuration."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import ValidationError

from app.backends.tool_limiter_redis import RedisRateLimiter, redis_limiters
from calls.errors import ConfigError
from tools.registry import TOOL_BUILDERS, ToolOverrides, build_tools
from tools.results import ToolResult, read_artifact
from tools.runtime import PROCESS_LIMITERS, ToolRuntime, TtlCache
from tools.settings import KNOWN_TOOLS


def _no_search(query: str, **_: Any) -> list[dict[str, Any]]:
    raise AssertionError("the network edge must not be reached")


async def _no_folder_search(query: str, k: int) -> list[Any]:
    raise AssertionError("the store must not be reached")


def test_default_settings_give_web_search_arxiv_wikipedia_in_order(make_settings) -> None:
    tools = build_tools(make_settings())

    assert [tool.name for tool in tools] == ["web_search", "arxiv", "wikipedia"]


def test_tools_follow_the_configured_order_without_repeats(make_settings) -> None:
    settings = make_settings(tools=["wikipedia", "web_search", "wikipedia"])

    assert [tool.name for tool in build_tools(settings)] == ["wikipedia", "web_search"]


def test_every_tool_is_async_and_returns_content_and_artifact(make_settings) -> None:
    for tool in build_tools(make_settings()):
        assert tool.response_format == "content_and_artifact"
        assert getattr(tool, "coroutine", None) is not None
        assert "Input:" in tool.description
        assert "Returns" in tool.description
        assert list(tool.args) == ["query"]


def test_an_unknown_tool_is_refused_with_the_known_names(make_settings, monkeypatch) -> None:
    monkeypatch.setenv("LATS_TOOLS", "web_search,bing")

    with pytest.raises(ValidationError, match=r"unknown tool\(s\) bing; known: web_search, arxiv"):
        make_settings()


def test_each_known_tool_name_builds_the_tool_of_that_name(make_settings, tmp_path) -> None:
    settings = make_settings(tools=list(KNOWN_TOOLS), local_docs_dir=str(tmp_path))
    tools = build_tools(settings, folder_search=_no_folder_search)

    assert list(TOOL_BUILDERS) == list(KNOWN_TOOLS)
    assert [tool.name for tool in tools] == list(KNOWN_TOOLS)


@pytest.mark.parametrize("backend", ["html", "lite", "duckduckgo,nope", ""])
def test_unknown_web_search_backend_fails_start_up(make_settings, backend: str) -> None:
    # ddgs would quietly fall back to "auto" (every engine) for these names.
    with pytest.raises(ConfigError, match="web_search_backend"):
        build_tools(make_settings(web_search_backend=backend))


def test_several_known_backends_are_accepted(make_settings) -> None:
    [tool] = build_tools(make_settings(tools=["web_search"], web_search_backend="duckduckgo,brave"))

    assert tool.name == "web_search"


def test_enabled_local_docs_without_a_folder_fails_start_up(make_settings) -> None:
    with pytest.raises(ConfigError, match="LATS_LOCAL_DOCS_DIR is not set"):
        build_tools(make_settings(tools=["local_docs"]))


def test_enabled_local_docs_with_a_missing_folder_fails_start_up(make_settings, tmp_path) -> None:
    settings = make_settings(tools=["local_docs"], local_docs_dir=tmp_path / "nope")

    with pytest.raises(ConfigError, match="is not an existing folder"):
        build_tools(settings, folder_search=_no_folder_search)


def test_enabled_local_docs_without_the_stores_search_fails_start_up(
    make_settings, tmp_path
) -> None:
    # Its folder is searched in the store the service loads it into, never in memory.
    settings = make_settings(tools=["local_docs"], local_docs_dir=tmp_path)

    with pytest.raises(ConfigError, match="loads LATS_LOCAL_DOCS_DIR into"):
        build_tools(settings)


def test_local_docs_takes_its_place_among_the_enabled_tools(make_settings, tmp_path) -> None:
    settings = make_settings(tools=["local_docs", "wikipedia"], local_docs_dir=tmp_path)

    tools = build_tools(settings, folder_search=_no_folder_search)

    assert [tool.name for tool in tools] == ["local_docs", "wikipedia"]


async def test_arguments_not_matching_the_schema_become_an_error_message(
    make_settings, call_tool
) -> None:
    overrides = ToolOverrides(web_search_fn=_no_search)
    [tool] = build_tools(make_settings(tools=["web_search"]), overrides=overrides)

    message = await call_tool(tool, {"q": "wrong argument name"})

    assert message.status == "error"
    assert message.content.startswith("web_search: invalid input")
    assert read_artifact(message.artifact)["error_kind"] == "invalid_input"


def test_a_configured_folder_alone_does_not_enable_local_docs(make_settings) -> None:
    settings = make_settings(local_docs_dir="/no/such/folder")

    assert "local_docs" not in [tool.name for tool in build_tools(settings)]


async def test_an_injected_cache_is_the_one_the_tools_fill(make_settings, call_tool, clock) -> None:
    cache: TtlCache[ToolResult] = TtlCache(clock=clock)
    overrides = ToolOverrides(web_search_fn=_results, cache=cache, clock=clock)
    [tool] = build_tools(make_settings(tools=["web_search"]), overrides=overrides)

    await call_tool(tool, {"query": "q"})

    assert len(cache) == 1


def test_redis_limiters_give_every_tool_the_process_s_limiter_shared_through_redis(
    make_settings,
) -> None:
    # Nothing listens there, and a test without an event loop could not open a connection:
    # building must not reach Redis.
    url = "redis://127.0.0.1:1/0"
    settings = make_settings(tools=["web_search", "arxiv"], tool_min_interval_s=0.5)

    tools = build_tools(settings, limiters=redis_limiters(url))

    limiters = {tool.name: _runtime(tool).limiter for tool in tools}
    assert limiters == redis_limiters(url).limiters()
    assert all(isinstance(limiter, RedisRateLimiter) for limiter in limiters.values())
    arxiv = limiters["arxiv"]
    assert isinstance(arxiv, RedisRateLimiter)
    assert arxiv.key == "plantree:tool-rate:arxiv"
    assert arxiv.min_interval_s == 3.0  # arXiv's own floor holds across processes too


def test_without_a_redis_url_the_tools_space_per_process(make_settings) -> None:
    [tool] = build_tools(make_settings(tools=["wikipedia"]))

    assert _runtime(tool).limiter is PROCESS_LIMITERS.limiter("wikipedia", 0.0)


def _runtime(tool: Any) -> ToolRuntime:
    runtime = inspect.getclosurevars(tool.coroutine).nonlocals["self"]  # the runtime that answers
    assert isinstance(runtime, ToolRuntime)
    return runtime


def _results(query: str, **_: Any) -> list[dict[str, Any]]:
    return [{"title": "T", "href": "https://t.example/", "body": "b"}]
