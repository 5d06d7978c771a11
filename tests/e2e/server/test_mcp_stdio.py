"""`python -m app mcp` as a real subprocess driven by the official MCP client over stdio, its
models the real Gemini client against the simulator."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from tests.support.sim_env import sim_service_env

ROOT = Path(__file__).resolve().parents[3]


def _params(sim: GeminiSimulator, tmp_path: Path) -> StdioServerParameters:
    env = {**os.environ, **sim_service_env(sim.base_url, tmp_path)}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "app", "mcp"], env=env, cwd=str(ROOT)
    )


async def test_solve_over_stdio_reports_progress_and_answers(tmp_path: Path) -> None:
    notes: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    with GeminiSimulator(research_scenario()) as sim:
        async with (
            stdio_client(_params(sim, tmp_path)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            result = await session.call_tool(
                "solve",
                {"task": "What do the sources say?", "params": {"max_paths": 2}},
                progress_callback=on_progress,
            )
            bad = await session.call_tool("solve", {"task": "x", "params": {"strategy": "bfs"}})
            listed = await session.call_tool("list_runs", {})

    assert tools == {"solve", "start_run", "get_run", "list_runs", "cancel_run"}
    assert not result.isError
    answer = result.structuredContent or {}
    assert answer["status"] == "done"
    assert answer["answer"]
    assert isinstance(answer["sources"], list)
    assert any(n.startswith("[searching]") for n in notes)
    assert notes[-1].startswith("[done]")
    assert bad.isError
    assert [r["run_id"] for r in (listed.structuredContent or {})["runs"]] == [answer["run_id"]]
    assert {r.model for r in sim.requests} == {"gemini-2.5-flash"}
