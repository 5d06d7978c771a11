"""The official JS SDK (`@langchain/langgraph-sdk`, locked in tests/e2e/js_sdk) under Node
against the server as a real process, its models the real Gemini client against the
simulator: a thread is created and a run streamed to its end."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ROOT, ServerProcess
from tests.support.sim_env import sim_service_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SOURCE = Path(__file__).resolve().parents[1] / "js_sdk"
FILES = ("package.json", "package-lock.json", "stream_run.mjs")
INSTALL = ROOT / ".cache" / "js-sdk"  # node_modules live outside the tree, like other caches


def _installed() -> Path:
    """The locked packages installed with `npm ci` (again only when the lock changed)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the JS SDK")
    INSTALL.mkdir(parents=True, exist_ok=True)
    lock = (SOURCE / "package-lock.json").read_bytes()
    stale = (
        not (INSTALL / "node_modules").exists()
        or (INSTALL / "package-lock.json").read_bytes() != lock
    )
    for name in FILES:
        shutil.copyfile(SOURCE / name, INSTALL / name)
    if stale:
        subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=INSTALL,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return INSTALL


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with GeminiSimulator(research_scenario()) as sim:
        env = {**sim_service_env(sim.base_url, tmp_path), "LATS_API_KEYS": "js:k1"}
        process = ServerProcess(env).start(timeout_s=180)
        try:
            yield process
        finally:
            process.kill()


def test_the_js_sdk_creates_a_thread_and_streams_a_run_to_its_end(server: ServerProcess) -> None:
    folder = _installed()
    done = subprocess.run(
        ["node", "stream_run.mjs", f"{server.url}/lg", "k1"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    parts: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    events = [p["event"] for p in parts]
    custom = [p["data"]["type"] for p in parts if p["event"] == "custom"]
    thread = parts[-1]["data"]

    assert events[0] == "metadata"
    assert {"values", "updates", "custom", "messages"} <= set(events)
    assert custom[0] == "run_started"
    assert custom[-1] == "done"
    assert events[-2] == "end"
    assert thread["status"] == "idle"
    assert [m["type"] for m in thread["values"]["messages"]] == ["human", "ai"]
    assert thread["values"]["status"] == "done"
    assert "Traceback" not in server.log()
