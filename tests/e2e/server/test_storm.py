"""A deployment under a storm: three processes (one API-only, two serving and executing) on one
Postgres database and one Redis, 200 runs started and 150 of them cancelled at random moments
through random processes. Every run still has one whole history, and its record agrees with it.
Also: an API-only process bounds the waiting runs on its own (no worker needed)."""

from __future__ import annotations

import collections
import logging
import time
import uuid
from pathlib import Path

import httpx
import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from tests.e2e.server.test_shared_runs import BODY, _start, storm
from tests.support.process import ServerProcess

logger = logging.getLogger(__name__)
pytestmark = pytest.mark.timeout(600)


def test_a_storm_of_runs_and_cancels_across_three_processes(
    env: dict[str, str],
    procs: list[ServerProcess],
    fresh_postgres_url: str,
    redis_url: str,
) -> None:
    env = {
        **env,
        "LATS_DATABASE_URL": fresh_postgres_url,
        "LATS_REDIS_URL": redis_url,
        "LATS_MAX_ACTIVE_RUNS": "16",
        "LATS_MAX_QUEUED_RUNS": "400",
        "LATS_SSE_HEARTBEAT_S": "5",
    }
    # Tasks of this test's own: the shared model cache outlives it.
    body = {**BODY, "task": f"{BODY['task']} ({uuid.uuid4().hex})"}
    with GeminiSimulator(research_scenario(), latency_s=0.02) as sim:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        api, *servers = _start(procs, env, ("serve", "--no-worker"), ("serve",), ("serve",))
        started = time.monotonic()
        ends = storm(
            [api.url, *(s.url for s in servers)],
            runs=200,
            cancels=150,
            seed=11,
            threads=24,
            cancel_within_s=2.0,
            body=body,
        )
        took = time.monotonic() - started

    logs = "\n".join(p.log() for p in procs)
    assert "Traceback" not in logs, logs[logs.find("Traceback") - 500 :][:4000]
    assert "claimed by" not in api.log()  # the API-only process executes nothing
    assert len(ends) == 200
    assert set(ends.values()) <= {"done", "cancelled"}
    counts = collections.Counter(ends.values())
    assert counts["cancelled"] >= 1
    assert counts["done"] >= 50  # the 50 never cancelled end done
    logger.info("storm: 200 runs, 150 cancels, 3 processes: %s in %.1fs", dict(counts), took)


def test_an_api_only_process_answers_429_when_enough_runs_wait(
    env: dict[str, str], procs: list[ServerProcess], fresh_postgres_url: str, tmp_path: Path
) -> None:
    env = {**env, "LATS_DATABASE_URL": fresh_postgres_url, "LATS_MAX_QUEUED_RUNS": "2"}
    (api,) = _start(procs, env, ("serve", "--no-worker"))  # no worker anywhere: runs wait
    with httpx.Client(base_url=api.url, timeout=30) as client:
        codes = [client.post("/runs", json=BODY).status_code for _ in range(3)]
        full = client.post("/runs", json=BODY)

    assert codes == [202, 202, 429]
    assert full.status_code == 429
    assert full.json()["code"] == "queue_full"
