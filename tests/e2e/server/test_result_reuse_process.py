"""An identical request reuses a finished run's result across processes that share the model
cache (agents/reuse.py): two service processes, each with its own embedded store, one Redis.
The second process answers from the first one's result without a model call."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess

pytestmark = pytest.mark.timeout(300)


def _solve(url: str, body: dict[str, object]) -> dict[str, object]:
    response = httpx.post(
        f"{url}/solve", json=body, headers={"Accept": "application/json"}, timeout=120
    )
    assert response.status_code == 200, response.text
    run: dict[str, object] = response.json()
    assert run["status"] == "done", run
    return run


def test_a_second_process_reuses_the_first_ones_result_through_the_shared_cache(
    env: dict[str, str], procs: list[ServerProcess], redis_url: str, tmp_path: Path
) -> None:
    # A task of its own: the Redis cache outlives the test.
    body = {"task": f"What do the sources say? ({uuid.uuid4().hex})", "max_paths": 2}
    with GeminiSimulator(research_scenario()) as sim:
        shared = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url, "LATS_REDIS_URL": redis_url}
        first_env = {**shared, "LATS_DATA_DIR": str(tmp_path / "first")}
        second_env = {**shared, "LATS_DATA_DIR": str(tmp_path / "second")}
        first_proc, second_proc = procs_pair = [
            ServerProcess(first_env),
            ServerProcess(second_env),
        ]
        procs.extend(procs_pair)
        for proc in procs_pair:
            proc.start(timeout_s=180)

        first = _solve(first_proc.url, body)
        sent = len(sim.requests)
        second = _solve(second_proc.url, body)
        after_second = len(sim.requests)
        fresh = _solve(second_proc.url, {**body, "use_cache": False})

    assert second["reused_from"] == first["run_id"]
    assert second["answer"] == first["answer"]
    assert second["metrics"]["llm_calls"] == 0  # type: ignore[index]
    assert sent > 0
    assert after_second == sent  # the second process sent the provider nothing
    assert fresh["reused_from"] is None
    assert len(sim.requests) > sent  # only the run with use_cache=false reached the model
    assert "Traceback" not in first_proc.log() + second_proc.log()
