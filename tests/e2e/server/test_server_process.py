"""The server as a real process, its model the real Gemini client against the simulator:
a full run, re-joining, SIGKILL and restart (resume), SIGTERM (drain), on SQLite and Postgres."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.events import iter_events, read_events
from testkit.gemini_roles import fake_call, to_sim_reply
from testkit.gemini_sim import Call, GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess, shared_runs_env
from testkit.scenario import Scenario

TREE = Scenario(
    plan=["Find sources", "Summarise them"],
    replans={"Find sources": ["Summarise them", "Compare them", "Check dates"]},
)
logger = logging.getLogger(__name__)

BODY = {"task": "What do the sources say?", "max_paths": 3, "strategy": "dfs"}


class HeldScript:
    """Answers as TREE does (the first executor call of a step uses `local_docs`); executor
    calls for `held` wait until `release` is set."""

    def __init__(self, held: str | None = None) -> None:
        self.held = held
        self.release = threading.Event()
        self.waiting = threading.Event()

    def __call__(self, request: SimRequest) -> SimReply:
        call = fake_call(request)
        if call.role == "executor":
            step = call.prompt.split("Step to execute: ", 1)[1].split("\n", 1)[0]
            if step == self.held and not self.release.is_set():
                self.waiting.set()
                self.release.wait(30)
            if request.tool_names and not request.function_responses:
                return Call("local_docs", {"query": step})
        return to_sim_reply(TREE.reply(call))


def executor_steps(sim: GeminiSimulator, since: int = 0) -> list[str]:
    steps = []
    for request in sim.requests[since:]:
        call = fake_call(request)
        if call.role == "executor" and not request.function_responses:
            steps.append(call.prompt.split("Step to execute: ", 1)[1].split("\n", 1)[0])
    return steps


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    # A killed server's runs are taken over 2 s after its death.
    return {**shared_runs_env(tmp_path), "LATS_LEASE_TTL_S": "2"}


def _start(env: dict[str, str], procs: list[ServerProcess]) -> ServerProcess:
    server = ServerProcess(env).start()
    procs.append(server)
    return server


def test_a_full_run_through_the_real_gemini_client(
    server_env: dict[str, str], procs: list[ServerProcess]
) -> None:
    with GeminiSimulator(HeldScript()) as sim:
        server = _start({**server_env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}, procs)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            run_id = client.post("/runs", json=BODY).json()["run_id"]
            events = read_events(server.url, run_id)
            run = client.get(f"/runs/{run_id}").json()

    assert events[-1][1] == "done"
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
    assert run["status"] == "done"
    assert (
        run["sources"] == [{"title": "sources.md", "url": "local://sources.md"}] or run["sources"]
    )
    tool_events = [e for _, kind, e in events if kind == "tool_call"]
    assert tool_events
    assert all(e["name"] == "local_docs" and e["ok"] for e in tool_events)
    assert {r.model for r in sim.requests} == {"gemini-2.5-flash"}


def _kill_mid_run(
    server_env: dict[str, str],
    procs: list[ServerProcess],
    sim: GeminiSimulator,
    script: HeldScript,
) -> tuple[str, list[tuple[int, str, dict[str, Any]]], list[str]]:
    """Start a run, wait until `Compare them` is held and `Summarise them` is saved, SIGKILL."""
    env = {**server_env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
    server = _start(env, procs)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        run_id = client.post("/runs", json=BODY).json()["run_id"]
    # `candidates` for a node comes a round after its `node_finished`, so once the first
    # child's candidates are out, its finish is in a checkpoint.
    seen: list[tuple[int, str, dict[str, Any]]] = []
    for event in iter_events(server.url, run_id):
        seen.append(event)
        if event[1] == "candidates" and event[2]["parent_id"] == "n1.1":
            break
    assert script.waiting.wait(30)
    server.kill()
    finished = [e["node_id"] for _, kind, e in seen if kind == "node_finished"]
    return run_id, seen, finished


def test_sigkill_then_restart_resumes_without_redoing_finished_nodes(
    server_env: dict[str, str], procs: list[ServerProcess]
) -> None:
    script = HeldScript(held="Compare them")
    with GeminiSimulator(script) as sim:
        run_id, seen, finished = _kill_mid_run(server_env, procs, sim, script)
        requests_before = len(sim.requests)
        script.release.set()

        started = time.monotonic()
        server = _start({**server_env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}, procs)
        rest = read_events(server.url, run_id, after=seen[-1][0])
        resume_s = time.monotonic() - started
        with httpx.Client(base_url=server.url, timeout=60) as client:
            trace = client.get(f"/runs/{run_id}/trace").text.splitlines()
            run = client.get(f"/runs/{run_id}").json()
        redone = executor_steps(sim, since=requests_before)

    assert {"n1", "n1.1"} <= set(finished)
    assert "Find sources" not in redone
    assert "Summarise them" not in redone
    assert "Compare them" in redone  # it was in flight: it runs again
    assert rest[-1][1] == "done"
    ids = [json.loads(line)["id"] for line in trace]
    assert ids == list(range(1, len(ids) + 1))  # event ids continue, none reused
    assert rest[0][0] == seen[-1][0] + 1
    assert run["status"] == "done"
    logger.info("SIGKILL resume: %.2fs from restart to done; re-executed %s", resume_s, redone)


def test_sigterm_drains_and_the_next_start_resumes(
    server_env: dict[str, str], procs: list[ServerProcess]
) -> None:
    script = HeldScript(held="Compare them")
    with GeminiSimulator(script) as sim:
        env = {**server_env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        server = _start(env, procs)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            run_id = client.post("/runs", json=BODY).json()["run_id"]
        assert script.waiting.wait(30)
        code = server.terminate()
        script.release.set()
        drained_log = "\n".join(server.lines)

        server = _start(env, procs)
        events = read_events(server.url, run_id)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            run = client.get(f"/runs/{run_id}").json()

    # uvicorn re-raises the signal after its graceful shutdown, so the status says SIGTERM.
    assert code in (0, -15)
    assert "they resume at the next start" in drained_log
    assert events[-1][1] == "done", (events[-1], "\n".join(server.lines[-40:]))
    assert "cancelled" not in [kind for _, kind, _ in events]
    assert run["status"] == "done"


def test_the_same_suite_runs_on_postgres(
    server_env: dict[str, str], procs: list[ServerProcess], postgres_url: str
) -> None:
    script = HeldScript(held="Compare them")
    with GeminiSimulator(script) as sim:
        env = {**server_env, "LATS_DATABASE_URL": postgres_url}
        run_id, seen, _ = _kill_mid_run(env, procs, sim, script)
        before = len(sim.requests)
        script.release.set()
        server = _start({**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}, procs)
        rest = read_events(server.url, run_id, after=seen[-1][0])
        redone = executor_steps(sim, since=before)

    assert rest[-1][1] == "done"
    assert rest[0][0] == seen[-1][0] + 1
    assert "Find sources" not in redone
