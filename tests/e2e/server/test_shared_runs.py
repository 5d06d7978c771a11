"""Several service processes share the runs: one owner per run, any process follows or cancels
any run, whole histories. Real processes, the Gemini simulator, SQLite or Postgres."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from testkit.events import Event, read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess, start_side_by_side
from testkit.storm import BODY, storm
from tests.support.storm import assert_whole, assert_whole_history

logger = logging.getLogger(__name__)
# Several service processes start and work on 2 shared cores: minutes, not the default 2.
pytestmark = pytest.mark.timeout(600)


def test_two_serve_processes_share_one_sqlite_data_dir(
    env: dict[str, str], procs: list[ServerProcess]
) -> None:
    with GeminiSimulator(research_scenario(), latency_s=0.05) as sim:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        a, b = start_side_by_side(procs, env, ("serve",), ("serve",))
        result = storm([a.url, b.url], runs=12, cancels=5, seed=1)

    logs = a.log() + b.log()
    assert "database is locked" not in logs
    assert "Traceback" not in logs, logs[logs.find("Traceback") - 500 :][:4000]
    assert_whole(result)
    assert set(result.terminals) <= {"done", "cancelled"}
    logger.info("sqlite, 2 processes: %s", dict(result.terminals))


def test_api_only_process_and_two_workers_on_postgres(
    env: dict[str, str], procs: list[ServerProcess], postgres_url: str
) -> None:
    with GeminiSimulator(research_scenario(), latency_s=0.05) as sim:
        env = {
            **env,
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATABASE_URL": postgres_url,
        }
        api, *workers = start_side_by_side(
            procs, env, ("serve", "--no-worker"), ("worker",), ("worker",)
        )
        result = storm([api.url], runs=12, cancels=4, seed=2)

    logs = "\n".join(p.log() for p in procs)
    assert "Traceback" not in logs, logs[logs.find("Traceback") - 500 :][:4000]
    assert all("claimed by" in w.log() for w in workers)  # both workers executed runs
    assert "claimed by" not in api.log()
    assert_whole(result)
    assert result.terminals["done"] >= 8


class HeldStep:
    """The research scenario, with the executor of `held` waiting until `release`."""

    def __init__(self, held: str) -> None:
        self.held = held
        self.release = threading.Event()
        self.waiting = threading.Event()
        self._inner = research_scenario()

    def __call__(self, request: SimRequest) -> SimReply:
        if f"Step to execute: {self.held}" in request.prompt and not self.release.is_set():
            self.waiting.set()
            self.release.wait(30)
        return self._inner(request)


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "postgres+redis"])
def test_a_stream_and_a_cancel_on_the_process_that_does_not_own_the_run(
    env: dict[str, str], procs: list[ServerProcess], backend: str, request: pytest.FixtureRequest
) -> None:
    if backend.startswith("postgres"):
        env = {**env, "LATS_DATABASE_URL": request.getfixturevalue("postgres_url")}
    if backend.endswith("redis"):
        env = {**env, "LATS_REDIS_URL": request.getfixturevalue("redis_url")}
    # A task of its own: the Redis model cache outlives the test, and the held call must
    # reach the model.
    body = {**BODY, "task": f"{BODY['task']} ({uuid.uuid4().hex})"}
    # A lease far longer than the cancel's wait: only the signal can stop the run in time
    # (the lease renewal, which also reports cancel requests, comes every 20 s).
    env = {**env, "LATS_LEASE_TTL_S": "60"}
    script = HeldStep("Summarise them")
    with GeminiSimulator(script) as sim:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        owner, other = start_side_by_side(procs, env, ("serve",), ("serve",))
        with httpx.Client(timeout=30) as client:
            run_id = client.post(f"{owner.url}/runs", json=body).json()["run_id"]
            with ThreadPoolExecutor(1) as pool:
                followed = pool.submit(read_events, other.url, run_id)
                assert script.waiting.wait(30)
                started = time.monotonic()
                cancelled = client.post(f"{other.url}/runs/{run_id}/cancel").json()
                cancel_s = time.monotonic() - started
                events = followed.result(timeout=30)
        script.release.set()

    assert cancelled["status"] == "cancelled"
    assert assert_whole_history(other.url, run_id, events) == "cancelled"
    assert "node_started" in [kind for _, kind, _ in events]  # followed live, not replayed only
    logger.info("%s: cancel through the other process took %.3fs", backend, cancel_s)


def test_a_killed_owners_run_is_finished_by_another_process_after_its_lease_expires(
    env: dict[str, str], procs: list[ServerProcess], postgres_url: str
) -> None:
    script = HeldStep("Summarise them")
    with GeminiSimulator(script) as sim:
        env = {
            **env,
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATABASE_URL": postgres_url,
        }
        owner, other = start_side_by_side(procs, env, ("serve",), ("serve",))
        with httpx.Client(timeout=30) as client:
            # Without the shared model cache, a node run again would reach the simulator.
            body = {**BODY, "use_cache": False}
            run_id = client.post(f"{owner.url}/runs", json=body).json()["run_id"]
        assert script.waiting.wait(60)
        before = read_events_until(other.url, run_id, "node_started")
        owner.kill()
        seen = len(sim.requests)
        executed_before = _executed(sim.requests)
        script.release.set()
        killed_at = time.monotonic()
        events = read_events(other.url, run_id)
        taken_s = time.monotonic() - killed_at
        executed_after = _executed(sim.requests[seen:])

    assert assert_whole_history(other.url, run_id, events) == "done"
    assert events[: len(before)] == before  # the history went on, no id reused
    assert "Find sources" in executed_before
    assert "Find sources" not in executed_after  # a completed node never runs again
    assert f"run={run_id} claimed by owner={other.owner}" in other.log()
    logger.info("take-over after SIGKILL: done %.2fs after the kill (lease 3 s)", taken_s)


def read_events_until(url: str, run_id: str, kind: str) -> list[Event]:
    """The stored events so far, which include at least one of `kind`."""
    with httpx.Client(base_url=url, timeout=30) as client:
        lines = client.get(f"/runs/{run_id}/trace").text.splitlines()
    events = [json.loads(line) for line in lines]
    out = [(e["id"], e["event"]["type"], e["event"]) for e in events]
    assert kind in [k for _, k, _ in out]
    return out


def _executed(requests: list[SimRequest]) -> list[str]:
    steps = []
    for request in requests:
        text = request.prompt
        if "Step to execute: " in text and not request.function_responses:
            steps.append(text.split("Step to execute: ", 1)[1].split("\n", 1)[0])
    return steps
