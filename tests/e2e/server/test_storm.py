"""A deployment under a storm: three processes (one API-only, two serving and executing) on one
Postgres database and one Redis, 200 runs started and 150 of them cancelled at random moments
through random processes. Every run still has one whole history, and its record agrees with it.
Also: an API-only process bounds the waiting runs on its own (no worker needed)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from testkit.process import ServerProcess, start_side_by_side
from testkit.storm import BODY, StormConfig, run_storm
from tests.support.storm import assert_whole

logger = logging.getLogger(__name__)
pytestmark = pytest.mark.timeout(600)


def test_a_storm_of_runs_and_cancels_across_three_processes(
    env: dict[str, str],
    procs: list[ServerProcess],
    postgres_url: str,
    redis_url: str,
) -> None:
    # The storm `python -m bench --only storm` measures, through the same code.
    config = StormConfig()
    result = run_storm(config, procs, env, postgres_url, redis_url)
    api = result.processes[0]

    logs = "\n".join(p.log() for p in procs)
    assert "Traceback" not in logs, logs[logs.find("Traceback") - 500 :][:4000]
    assert "claimed by" not in api.log()  # the API-only process executes nothing
    assert_whole(result)
    assert len(result.ends) == config.runs
    counts = result.terminals
    assert set(counts) <= {"done", "cancelled"}
    assert counts["cancelled"] >= 1
    assert counts["done"] >= config.runs - config.cancels  # the never cancelled end done
    logger.info(
        "storm: %d runs, %d cancels, 3 processes: %s in %.1fs",
        config.runs,
        config.cancels,
        dict(counts),
        result.seconds,
    )


def test_an_api_only_process_answers_429_when_enough_runs_wait(
    env: dict[str, str], procs: list[ServerProcess], postgres_url: str, tmp_path: Path
) -> None:
    env = {**env, "LATS_DATABASE_URL": postgres_url, "LATS_MAX_QUEUED_RUNS": "2"}
    (api,) = start_side_by_side(
        procs, env, ("serve", "--no-worker")
    )  # no worker anywhere: runs wait
    with httpx.Client(base_url=api.url, timeout=30) as client:
        codes = [client.post("/runs", json=BODY).status_code for _ in range(3)]
        full = client.post("/runs", json=BODY)

    assert codes == [202, 202, 429]
    assert full.status_code == 429
    assert full.json()["code"] == "queue_full"
