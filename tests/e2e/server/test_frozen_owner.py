"""A worker frozen past its lease (SIGSTOP), its runs taken over and finished by another
process, then woken (SIGCONT): every write it still had in hand is fenced off. Real
processes on one Postgres database, the Gemini simulator telling the two apart by their keys."""

from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from testkit.events import read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator, SimRequest, Text
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess
from testkit.storm import BODY
from testkit.waiting import wait_for
from tests.support.storm import assert_whole_history

logger = logging.getLogger(__name__)
pytestmark = pytest.mark.timeout(300)

FROZEN_KEY = "frozen-worker-key"
TAKER_KEY = "taking-worker-key"
STALE = "STALE-ANSWER-OF-THE-FROZEN-WORKER"
RUNS = 3
HELD_STEP = "Step to execute: Summarise them"


class FrozenOwnerScript:
    """The research scenario; the frozen worker's calls for the held step wait until
    `release`, then answer with a marker that must never reach a stored event."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = threading.Semaphore(0)
        self._inner = research_scenario()

    def __call__(self, request: SimRequest) -> SimReply:
        if request.api_key == FROZEN_KEY and HELD_STEP in request.prompt:
            self.held.release()
            self.release.wait(120)
            return Text(f"{STALE}: the sources disagree.")
        return self._inner(request)


def test_a_frozen_owner_woken_after_its_runs_were_taken_over_writes_nothing(
    env: dict[str, str], procs: list[ServerProcess], postgres_url: str
) -> None:
    script = FrozenOwnerScript()
    with GeminiSimulator(script) as sim:
        shared = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url, "LATS_DATABASE_URL": postgres_url}
        frozen = ServerProcess({**shared, "GOOGLE_API_KEY": FROZEN_KEY})
        taker = ServerProcess({**shared, "GOOGLE_API_KEY": TAKER_KEY})
        procs.extend([frozen, taker])
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda p: p.start(timeout_s=180), (frozen, taker)))
        assert frozen.proc is not None
        pid = frozen.proc.pid
        with httpx.Client(timeout=30) as client:
            run_ids = [
                client.post(
                    f"{frozen.url}/runs",
                    # Tasks of their own and no shared model cache: the taker's calls reach
                    # the simulator.
                    json={
                        **BODY,
                        "task": f"{BODY['task']} ({uuid.uuid4().hex})",
                        "use_cache": False,
                    },
                ).json()["run_id"]
                for _ in range(RUNS)
            ]
        for _ in run_ids:  # every run is mid-step on the frozen worker
            assert script.held.acquire(timeout=60)

        # The readers' pool outlives the frozen spell: whatever fails, the worker is woken
        # before the pool waits for its readers.
        with ThreadPoolExecutor(RUNS) as pool:
            os.kill(pid, signal.SIGSTOP)
            try:
                histories = list(
                    pool.map(
                        lambda run_id: read_events(taker.url, run_id, timeout=60, within_s=120),
                        run_ids,
                    )
                )
                taken = {
                    run_id: f"run={run_id} claimed by owner={taker.owner}" for run_id in run_ids
                }
                wait_for(lambda: all(line in taker.log() for line in taken.values()), "take-overs")
                traces = {run_id: _trace(taker.url, run_id) for run_id in run_ids}
            finally:
                os.kill(pid, signal.SIGCONT)
        # Awake: its held calls are answered now, with the marker, and it must notice each
        # lost lease (at its renewal or its next write) without writing anything.
        script.release.set()
        wait_for(
            lambda: all(f"run={run_id} lease lost" in frozen.log() for run_id in run_ids),
            "the woken worker to notice its lost leases",
        )
        after = {run_id: _trace(taker.url, run_id) for run_id in run_ids}
        stale_answered = [r for r in sim.requests if r.api_key == FROZEN_KEY and r.status == 200]

    for run_id, events in zip(run_ids, histories, strict=True):
        assert assert_whole_history(taker.url, run_id, events) == "done"
        assert after[run_id] == traces[run_id]  # nothing landed after the wake-up
        assert STALE not in after[run_id]
    assert len([r for r in stale_answered if HELD_STEP in r.prompt]) == RUNS
    runs = [httpx.get(f"{taker.url}/runs/{run_id}").json() for run_id in run_ids]
    assert [run["status"] for run in runs] == ["done"] * RUNS
    assert "Traceback" not in frozen.log() + taker.log()
    logger.info("frozen owner: %d runs taken over and finished, none written after SIGCONT", RUNS)


def _trace(url: str, run_id: str) -> str:
    return httpx.get(f"{url}/runs/{run_id}/trace", timeout=30).text
