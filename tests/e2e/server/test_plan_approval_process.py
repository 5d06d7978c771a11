"""Plan approval survives a restart: a run with `approve_plan` waits at its plan in a real
server process (the Gemini simulator behind the real Gemini client), the process is killed,
a new one on the same data directory makes no model call for the waiting run, and the run
goes on from its checkpoint once approved there."""

from __future__ import annotations

import time

import httpx
import pytest

from testkit.events import iter_events, read_events
from testkit.gemini_roles import research_scenario, role_of
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess

pytestmark = pytest.mark.timeout(600)
BODY = {"task": "What do the sources say?", "max_paths": 1, "approve_plan": True}
IDLE_S = 3.0  # a sweep for claimable runs happens every second with the 3 s lease of `env`


def test_a_run_waiting_for_its_plan_survives_a_restart_and_runs_once_approved(
    env: dict[str, str], procs: list[ServerProcess]
) -> None:
    with GeminiSimulator(research_scenario()) as sim:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        first = ServerProcess(env)
        procs.append(first)
        first.start(timeout_s=180)
        run_id = httpx.post(f"{first.url}/runs", json=BODY, timeout=30).json()["run_id"]
        before = []
        for event in iter_events(first.url, run_id):
            before.append(event)
            if event[1] == "interrupt":
                break
        first.kill()
        calls_before = [role_of(r) for r in sim.requests]

        second = ServerProcess(env)
        procs.append(second)
        second.start(timeout_s=180)
        waiting = httpx.get(f"{second.url}/runs/{run_id}", timeout=30).json()
        time.sleep(IDLE_S)
        calls_idle = len(sim.requests)
        resumed = httpx.post(
            f"{second.url}/runs/{run_id}/resume", json={"action": "approve"}, timeout=30
        )
        after = read_events(second.url, run_id, after=before[-1][0])
        calls_after = [role_of(r) for r in sim.requests[calls_idle:]]
        run = httpx.get(f"{second.url}/runs/{run_id}", timeout=30).json()

    logs = first.log() + second.log()
    assert "Traceback" not in logs, logs[logs.find("Traceback") - 500 :][:4000]
    assert before[-1][2]["steps"] == ["Find sources", "Summarise them"]
    assert calls_before == ["planner"]
    assert (waiting["status"], waiting["awaiting"]) == ("interrupted", "plan")
    assert calls_idle == len(calls_before)  # nothing called while it waited
    assert resumed.status_code == 200
    assert after[0][1] == "plan_reviewed"
    assert after[-1][1] == "done"
    assert "planner" not in calls_after
    assert "executor" in calls_after
    assert run["status"] == "done"
