"""MCP servers' tools for the executor: a real stdio MCP server process written for the tests
(tests/integration/tools/data/mcp_fixture_server.py), including one that dies mid-call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.engine import Engine
from agents.params import RunParams
from app.settings import Settings
from calls.errors import ConfigError
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.tool_fixtures import CallTool
from tools.mcp import load_mcp_tools, parse_servers, tool_name

FIXTURE = Path(__file__).parent / "data" / "mcp_fixture_server.py"
SERVERS = {"mcpServers": {"fixture": {"command": sys.executable, "args": [str(FIXTURE)]}}}


async def _tools(timeout_s: float = 20.0, servers: dict[str, Any] = SERVERS) -> dict[str, Any]:
    tools = await load_mcp_tools(
        parse_servers(json.dumps(servers)), timeout_s=timeout_s, max_chars=500
    )
    return {t.name: t for t in tools}


async def test_a_servers_tools_are_loaded_under_its_namespace() -> None:
    tools = await _tools()

    assert set(tools) == {"fixture__echo", "fixture__refuse", "fixture__hang", "fixture__die"}
    assert tools["fixture__echo"].description.startswith("[fixture] Repeat")
    assert "text" in tools["fixture__echo"].args


async def test_calls_answer_and_failures_become_error_observations(call_tool: CallTool) -> None:
    tools = await _tools()

    ok = await call_tool(tools["fixture__echo"], {"text": "hi"})
    refused = await call_tool(tools["fixture__refuse"], {"text": "hi"})
    died = await call_tool(tools["fixture__die"], {"text": "hi"})
    after_death = await call_tool(tools["fixture__echo"], {"text": "again"})

    assert ok.content == "echo: hi"
    assert ok.artifact["ok"] is True
    assert refused.artifact == {"ok": False, "error_kind": "http_error", "sources": []}
    assert "cannot handle hi" in str(refused.content)
    assert died.artifact["ok"] is False
    assert died.artifact["error_kind"] in {"network", "internal"}
    assert str(died.content).startswith("fixture__die: ")
    assert after_death.content == "echo: again"  # each call has its own server process


async def test_a_slow_server_times_out_into_an_observation(call_tool: CallTool) -> None:
    tools = await _tools(timeout_s=3.0)

    hung = await call_tool(tools["fixture__hang"], {"text": "hi"})

    assert hung.artifact == {"ok": False, "error_kind": "timeout", "sources": []}


async def test_an_unreachable_server_is_left_out() -> None:
    servers = {
        "mcpServers": {
            **SERVERS["mcpServers"],
            "gone": {"command": "/nonexistent/mcp-server", "args": []},
        }
    }

    tools = await _tools(servers=servers)

    assert all(name.startswith("fixture__") for name in tools)


async def test_a_run_survives_a_server_that_dies_mid_call(settings: Settings) -> None:
    scenario = Scenario(
        plan=["A"],
        replans={"A": ["B", "C"]},
        tools={"B": ("fixture__echo", {"text": "b"}), "C": ("fixture__die", {"text": "c"})},
    )
    tools = await _tools()
    engine = Engine(settings=settings, models=FakeModels(scenario), tools=list(tools.values()))
    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    result = await engine.run(
        "q", RunParams(strategy="mcts", max_paths=2, max_concurrency=1), sink=sink
    )

    calls = {e.name: e for e in events if e.type == "tool_call"}
    assert result.status == "done"
    assert result.metrics["paths_completed"] == 2
    assert calls["fixture__echo"].ok
    assert not calls["fixture__die"].ok
    assert result.metrics["tool_errors"] == 1


def test_bad_settings_fail_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_servers("{nope")
    with pytest.raises(ConfigError, match="needs a `command` or a `url`"):
        parse_servers('{"mcpServers": {"x": {}}}')
    with pytest.raises(ConfigError, match="neither JSON nor a file"):
        parse_servers(str(tmp_path / "missing.json"))
    config = tmp_path / "servers.json"
    config.write_text('{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}')
    assert parse_servers(str(config))["web"]["transport"] == "streamable_http"


def test_names_are_namespaced_and_fit_function_name_rules() -> None:
    assert tool_name("my server", "do.it") == "my_server__do_it"
    assert len(tool_name("s" * 40, "t" * 40)) == 64
