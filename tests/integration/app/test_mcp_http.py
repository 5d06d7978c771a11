"""The official MCP client over streamable HTTP against the real app at /mcp."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from mcp.types import TextResourceContents
from pydantic import AnyUrl, SecretStr

from app.http.sse import frames
from testkit.fakes import FakeCall, Reply, Script
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.mcp import mcp_session

TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})
TOOLS = {"solve", "start_run", "get_run", "list_runs", "cancel_run"}


def _held(scenario: Scenario) -> tuple[Script, asyncio.Event]:
    """The scenario's script and an event set once an executor call has begun."""
    running = asyncio.Event()

    async def script(call: FakeCall) -> Reply:
        if call.role == "executor":
            running.set()
            if scenario.gate is None:
                await asyncio.Event().wait()  # held until the run is cancelled
        return await scenario(call)

    return script, running


def _json(result: Any) -> dict[str, Any]:
    assert not result.isError, result.content
    structured: dict[str, Any] = result.structuredContent
    return structured


async def test_the_tools_are_listed(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc, mcp_session(svc.url) as session:
        tools = (await session.list_tools()).tools

    assert {t.name for t in tools} == TOOLS
    solve = next(t for t in tools if t.name == "solve")
    assert "task" in solve.inputSchema["required"]


async def test_solve_reports_progress_then_returns_answer_sources_and_run_id(
    service_for: ServiceMaker,
) -> None:
    notes: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, message))

    async with service_for(TREE) as svc, mcp_session(svc.url) as session:
        result = await session.call_tool(
            "solve",
            {"task": "What is B?", "params": {"max_paths": 2, "strategy": "mcts"}},
            progress_callback=on_progress,
        )
        answer = _json(result)
        run = (await svc.client.get(f"/runs/{answer['run_id']}")).json()

    assert answer["status"] == "done"
    assert answer["answer"] in {"answer via B", "answer via C"}
    assert answer["stop_reason"] == "max_paths"
    assert run["params"]["max_paths"] == 2
    messages = [m or "" for _, m in notes]
    assert any("plan: 1 steps" in m for m in messages)
    assert any("2/2 paths complete" in m for m in messages)
    assert messages[-1].startswith("[done]")
    assert [p for p, _ in notes] == sorted(p for p, _ in notes)


async def test_a_parameter_out_of_bounds_is_a_tool_error_not_a_crash(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc, mcp_session(svc.url) as session:
        bad = await session.call_tool("solve", {"task": "x", "params": {"max_paths": 999}})
        empty = await session.call_tool("start_run", {"task": "  "})
        unknown = await session.call_tool("get_run", {"run_id": "nope"})
        still_fine = await session.list_tools()

    assert bad.isError
    assert "max_paths" in bad.content[0].text  # type: ignore[union-attr]
    assert empty.isError
    assert unknown.isError
    assert "no run nope" in unknown.content[0].text  # type: ignore[union-attr]
    assert len(still_fine.tools) == len(TOOLS)


async def test_cancel_run_stops_a_running_search(service_for: ServiceMaker) -> None:
    script, running = _held(Scenario(plan=["A"]))
    async with service_for(script) as svc, mcp_session(svc.url) as session:
        started = _json(await session.call_tool("start_run", {"task": "held"}))
        await running.wait()  # the step is running and held there
        cancelled = _json(await session.call_tool("cancel_run", {"run_id": started["run_id"]}))
        run = _json(await session.call_tool("get_run", {"run_id": started["run_id"]}))

    assert cancelled["status"] == "cancelled"
    assert run["status"] == "cancelled"
    assert "nodes" not in run


async def test_runs_are_listed_and_readable_as_resources(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc, mcp_session(svc.url) as session:
        done = _json(await session.call_tool("solve", {"task": "What is B?"}))
        listed = _json(await session.call_tool("list_runs", {"limit": 5}))
        templates = await session.list_resource_templates()
        resource = await session.read_resource(AnyUrl(f"plantree://runs/{done['run_id']}"))

    assert [r["run_id"] for r in listed["runs"]] == [done["run_id"]]
    assert listed["next_offset"] is None
    assert [t.uriTemplate for t in templates.resourceTemplates] == ["plantree://runs/{run_id}"]
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    body = json.loads(content.text)
    assert body["status"] == "done"
    assert [n["step"] for n in body["nodes"]][:1] == ["A"]


async def test_a_client_that_leaves_does_not_stop_the_run(service_for: ServiceMaker) -> None:
    gate = asyncio.Event()
    script, running = _held(Scenario(plan=["A"], gate=gate))
    async with service_for(script) as svc:
        async with mcp_session(svc.url) as session:
            call = asyncio.create_task(session.call_tool("solve", {"task": "leave early"}))
            await running.wait()
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
        run_id = (await svc.client.get("/runs")).json()["runs"][0]["run_id"]
        gate.set()
        finished = (
            await svc.client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "0"})
        ).text
        run = (await svc.client.get(f"/runs/{run_id}")).json()

    assert [f.event for f in frames(finished.splitlines())][-1] == "done"
    assert run["status"] == "done"


async def test_the_api_keys_guard_the_mcp_endpoint(service_for: ServiceMaker) -> None:
    async with service_for(TREE, api_keys=[SecretStr("s3cret")]) as svc:
        refused = await svc.client.post("/mcp", json={})
        async with mcp_session(svc.url, "s3cret") as session:
            tools = (await session.list_tools()).tools
        with pytest.raises(BaseException):  # noqa: B017, PT011 - the SDK wraps it in a group
            async with mcp_session(svc.url, "wrong"):
                pass

    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized"
    assert {t.name for t in tools} == TOOLS
