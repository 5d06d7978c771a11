"""The simulator as its own process (how a server-level test uses it): it prints its URL,
serves a named scenario to the real client, and reports what it received over HTTP."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.tools import tool

from agents.engine import Engine
from agents.params import RunParams
from app.settings import Settings
from calls.models import SettingsModelFactory

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


@tool
def lookup(query: str) -> str:
    """Look a query up."""
    return f"notes on {query}"


@pytest.fixture
async def sim_url(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "testkit.gemini_sim",
        "--port",
        "0",
        "--scenario",
        "research",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        key, _, url = line.decode().strip().partition("=")
        assert key == "GEMINI_SIM_URL", line
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
        monkeypatch.setenv("GOOGLE_API_KEY", "simulated-key")
        yield url
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0


async def test_an_engine_run_against_the_simulator_process(sim_url: str, tmp_path: Any) -> None:
    settings = Settings(
        _env_file=None,
        model="google_genai:gemini-2.5-flash",
        model_rps=0,
        data_dir=tmp_path / "data",
    )
    engine = Engine(settings=settings, models=SettingsModelFactory(settings), tools=[lookup])

    result = await engine.run("What do the sources say?", RunParams(max_paths=2))

    assert result.status == "done", result.error
    async with httpx.AsyncClient(base_url=sim_url, timeout=5) as client:
        recorded = (await client.get("/_sim/requests")).json()
    assert len(recorded) == result.metrics["llm_calls"]
    assert {row["status"] for row in recorded} == {200}
    declared = [
        decl["name"]
        for row in recorded
        for spec in row["body"].get("tools", [])
        for decl in spec.get("functionDeclarations", [])
    ]
    assert "lookup" in declared
