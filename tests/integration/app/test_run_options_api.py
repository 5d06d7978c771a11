"""A run's own models, tools and web-search domains through the run API, with scripted models
and the real `web_search` tool over an injected search function."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import tool

from app.settings import Settings
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tools.registry import ToolOverrides, build_tools

PLAIN = Scenario(plan=["A"], replans={"A": []})
SEARCHING = Scenario(plan=["A"], replans={"A": []}, tools={"A": ("web_search", {"query": "q"})})
RESULTS = [
    {"title": "Kept page", "href": "https://example.com/kept", "body": "kept passage"},
    {"title": "Hidden page", "href": "https://news.blocked.org/x", "body": "hidden passage"},
]


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool
def encyclopedia(query: str) -> str:
    """Read an encyclopedia article."""
    return f"article on {query}"


async def _solve(svc: Any, **body: Any) -> Any:
    return await svc.client.post(
        "/solve",
        json={"task": "What is A?", **body},
        headers={"Accept": "application/json"},
    )


async def test_a_run_with_an_allowed_model_uses_it_for_its_roles(
    service_for: ServiceMaker,
) -> None:
    async with service_for(PLAIN, allowed_models=["fake:a", "fake:b"]) as svc:
        response = await _solve(svc, model="fake:a", models={"executor": "fake:b"})
        calls = svc.models.recorder.calls

    assert response.status_code == 200
    assert response.json()["status"] == "done"
    assert {c.spec for c in calls if c.role == "executor"} == {"fake:b"}
    assert {c.spec for c in calls if c.role == "planner"} == {"fake:a"}
    assert response.json()["params"]["models"] == {"executor": "fake:b"}


async def test_a_run_without_a_model_uses_the_server_s(service_for: ServiceMaker) -> None:
    async with service_for(PLAIN, allowed_models=["fake:a"]) as svc:
        response = await _solve(svc)
        calls = svc.models.recorder.calls

    assert response.status_code == 200
    assert {c.spec for c in calls} == {"scripted"}


async def test_a_model_off_the_allow_list_is_a_422(service_for: ServiceMaker) -> None:
    async with service_for(PLAIN, allowed_models=["fake:a"]) as svc:
        response = await _solve(svc, models={"voter": "openai:gpt-4o"})
        calls = svc.models.recorder.calls

    assert response.status_code == 422
    assert response.json()["code"] == "option_refused"
    assert response.json()["fields"][0]["loc"] == ["body", "models", "voter"]
    assert calls == []


async def test_without_an_allow_list_a_run_choosing_a_model_is_a_422(
    service_for: ServiceMaker,
) -> None:
    async with service_for(PLAIN) as svc:
        response = await _solve(svc, model="fake:a")

    assert response.status_code == 422
    assert "LATS_ALLOWED_MODELS" in response.json()["message"]


async def test_a_run_limited_to_one_tool_binds_only_it(service_for: ServiceMaker) -> None:
    async with service_for(PLAIN, tools=[lookup, encyclopedia]) as svc:
        limited = await _solve(svc, tools=["encyclopedia"])
        executor = svc.models.recorder.by_role("executor")

    assert limited.status_code == 200
    assert executor
    assert {tuple(c.tools) for c in executor} == {("encyclopedia",)}


async def test_an_unknown_or_disabled_tool_is_a_422(service_for: ServiceMaker) -> None:
    async with service_for(PLAIN, tools=[lookup]) as svc:
        response = await _solve(svc, tools=["lookup", "arxiv"])

    assert response.status_code == 422
    assert "arxiv" in response.json()["message"]


def _web_search(settings: Settings, queries: list[str]) -> Any:
    def search(
        query: str, *, region: str, safesearch: str, max_results: int, backend: str
    ) -> list[dict[str, Any]]:
        queries.append(query)
        return RESULTS

    tool_settings = settings.model_copy(update={"tools": ["web_search"]})
    [web] = build_tools(tool_settings, overrides=ToolOverrides(web_search_fn=search))
    return web


async def test_an_excluded_domain_s_result_never_reaches_the_model_s_prompt(
    service_for: ServiceMaker, settings: Settings
) -> None:
    queries: list[str] = []
    web = _web_search(settings, queries)
    async with service_for(SEARCHING, tools=[web]) as svc:
        response = await _solve(svc, exclude_domains=["blocked.org"], use_cache=False)
        prompts = [c.prompt for c in svc.models.recorder.calls]

    assert response.status_code == 200
    assert queries == ["q"]
    assert any("kept passage" in p for p in prompts)
    assert not any("blocked.org" in p or "hidden passage" in p for p in prompts)
    assert [s["url"] for s in response.json()["sources"]] == ["https://example.com/kept"]


async def test_include_domains_show_the_model_only_those_domains(
    service_for: ServiceMaker, settings: Settings
) -> None:
    web = _web_search(settings, [])
    async with service_for(SEARCHING, tools=[web]) as svc:
        response = await _solve(svc, include_domains=["blocked.org"], use_cache=False)
        prompts = [c.prompt for c in svc.models.recorder.calls]

    assert response.status_code == 200
    assert any("hidden passage" in p for p in prompts)
    assert not any("kept passage" in p for p in prompts)
