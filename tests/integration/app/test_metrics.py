"""/metrics parsed with prometheus-client's parser: the counters move by what a run did."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
from langchain_core.exceptions import ModelRateLimitError
from langchain_core.tools import tool
from prometheus_client.parser import text_string_to_metric_families

from app.http.sse import aframes
from app.settings import Settings
from testkit.clock import FakeClock
from testkit.fakes import FakeCall, Reply
from testkit.policy_models import limiters_on
from testkit.scenario import Scenario
from tests.support.server import serve

Samples = Counter[tuple[str, frozenset[tuple[str, str]]]]

TREE = Scenario(
    plan=["A"],
    replans={"A": ["B", "C"]},
    tools={"B": ("lookup", {"query": "b"}), "C": ("broken", {"query": "c"})},
)


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool(response_format="content_and_artifact")
def broken(query: str) -> tuple[str, dict[str, Any]]:
    """A tool whose service times out."""
    return "the service timed out", {"ok": False, "error_kind": "timeout"}


async def _scrape(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    samples: Samples = Counter()
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] += sample.value
    return samples


def _sum(samples: Samples, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def _delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return _sum(after, name, **labels) - _sum(before, name, **labels)


async def _solve(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.post(
        "/solve",
        json={"task": "What is B?", "max_paths": 2, "max_concurrency": 1, "strategy": "mcts"},
        headers={"Accept": "application/json"},
    )
    run: dict[str, Any] = response.json()
    assert run["status"] == "done"
    return run


async def test_a_run_moves_the_counters_by_what_it_did(settings: Settings) -> None:
    async with serve(settings, TREE, tools=[lookup, broken]) as svc:
        before = await _scrape(svc.client)
        run = await _solve(svc.client)
        after = await _scrape(svc.client)

    metrics = run["metrics"]

    def delta(name: str, **labels: str) -> float:
        return _delta(before, after, name, **labels)

    assert delta("plantree_runs_total", status="done") == 1
    assert delta("plantree_model_calls_total") == metrics["llm_calls"]
    for role, calls in metrics["llm_calls_by_role"].items():
        assert delta("plantree_model_calls_total", role=role, model="scripted") == calls
    assert delta("plantree_model_tokens_total", kind="input") == metrics["input_tokens"]
    assert delta("plantree_model_tokens_total", kind="output") == metrics["output_tokens"]
    assert delta("plantree_model_call_seconds_count") == metrics["llm_calls"]
    assert delta("plantree_tool_calls_total", tool="lookup") == 1
    assert delta("plantree_tool_calls_total", tool="broken") == 1
    assert delta("plantree_tool_errors_total", tool="broken", error="timeout") == 1
    assert delta("plantree_tool_errors_total", tool="lookup") == 0
    assert delta("plantree_events_total", type="node_finished") == 3
    assert delta("plantree_events_total", type="done") == 1
    assert delta("plantree_event_latency_seconds_count") == delta("plantree_events_total")
    assert delta("plantree_run_queue_wait_seconds_count") == 1
    assert _sum(after, "plantree_runs_active") == 0
    assert _sum(after, "plantree_runs_queued") == 0
    assert delta("plantree_http_requests_total", route="/solve", status="200") == 1
    assert delta("plantree_http_requests_total", route="/metrics", status="200") == 1


async def test_a_repeated_run_counts_cache_hits_not_model_calls(settings: Settings) -> None:
    # Results not reused: the repeated run searches again, through the model-call cache.
    no_reuse = settings.model_copy(update={"result_reuse_s": 0})
    async with serve(no_reuse, TREE, tools=[lookup, broken]) as svc:
        await _solve(svc.client)
        before = await _scrape(svc.client)
        again = await _solve(svc.client)
        after = await _scrape(svc.client)

    assert again["metrics"]["cache_hits"] > 0
    assert _delta(before, after, "plantree_cache_hits_total") == again["metrics"]["cache_hits"]
    assert _delta(before, after, "plantree_model_calls_total") == again["metrics"]["llm_calls"]


async def test_a_repeated_request_reuses_the_first_runs_result(settings: Settings) -> None:
    async with serve(settings, TREE, tools=[lookup, broken]) as svc:
        first = await _solve(svc.client)
        before = await _scrape(svc.client)
        again = await _solve(svc.client)
        after = await _scrape(svc.client)
        stored = (await svc.client.get(f"/runs/{again['run_id']}")).json()

    assert again["reused_from"] == first["run_id"]
    assert first["reused_from"] is None
    assert again["answer"] == first["answer"]
    assert again["metrics"]["llm_calls"] == 0
    assert _delta(before, after, "plantree_model_calls_total") == 0
    assert _delta(before, after, "plantree_cache_hits_total") == 0
    assert stored["reused_from"] == first["run_id"]
    assert stored["status"] == "done"


async def test_unknown_paths_are_one_label_not_one_per_path(settings: Settings) -> None:
    async with serve(settings, TREE) as svc:
        before = await _scrape(svc.client)
        for n in range(3):
            await svc.client.get(f"/no/such/{n}")
        await svc.client.get("/runs/abc")
        after = await _scrape(svc.client)

    assert _delta(before, after, "plantree_http_requests_total", route="unmatched") == 3
    assert _delta(before, after, "plantree_http_requests_total", route="/runs/{run_id}") == 1


async def test_the_call_policy_reports_rate_limits_and_retries(settings: Settings) -> None:
    refused: list[str] = []

    def script(call: FakeCall) -> Reply:
        if call.role == "planner" and not refused:
            refused.append(call.prompt)
            return ModelRateLimitError("429 from the provider")
        return TREE.reply(call)

    limiters = limiters_on(FakeClock())
    async with serve(settings, script, [lookup, broken], policy=True, limiters=limiters) as svc:
        before = await _scrape(svc.client)
        await _solve(svc.client)
        after = await _scrape(svc.client)

    assert refused
    assert _delta(before, after, "plantree_model_retries_total", role="planner", reason="429") == 1
    assert _delta(before, after, "plantree_model_rate_limited_total", role="planner") == 1
    assert _sum(after, "plantree_model_rate_limit") > 0  # the adaptive limit now in force


async def test_events_the_service_writes_itself_are_counted(settings: Settings) -> None:
    gate = asyncio.Event()  # never set: the run is cancelled while its first step waits
    stuck = Scenario(plan=["A"], gate=gate)
    async with serve(settings, stuck) as svc:
        before = await _scrape(svc.client)
        run_id = (await svc.client.post("/runs", json={"task": "never ends"})).json()["run_id"]
        assert (await svc.client.post(f"/runs/{run_id}/cancel")).status_code in (200, 202)
        async with (
            asyncio.timeout(10),
            svc.client.stream("GET", f"/runs/{run_id}/events") as stream,
        ):
            # The stream closes after the terminal event.
            async for frame in aframes(stream.aiter_lines()):
                if frame.event == "cancelled":
                    break
        after = await _scrape(svc.client)

    assert _delta(before, after, "plantree_events_total", type="run_started") == 1
    assert _delta(before, after, "plantree_events_total", type="cancelled") == 1
    assert _delta(before, after, "plantree_runs_total", status="cancelled") == 1
