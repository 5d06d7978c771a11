"""Limits across two service processes on one Postgres and one Redis: 50 concurrent submits
against a run limit of 5 are accepted exactly 5 times between them, a burst of requests
beyond the key's rate is refused once for both, not once per process, and the model's
in-flight cap holds for the two processes together."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_script import Script
from testkit.gemini_sim import GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess, start_side_by_side
from testkit.storm import BODY
from testkit.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

# A key name of this test run's own: the limits it fills in the machine's Redis are its own.
NAME = f"alice-{uuid.uuid4().hex[:8]}"
KEY = f"{NAME}:key-a-1f"
HEADERS = {"X-API-Key": "key-a-1f"}
CAP_KEY = f"carol-{uuid.uuid4().hex[:8]}:key-c-3f"  # a key the burst test has not spent
CAP_HEADERS = {"X-API-Key": "key-c-3f"}
SUBMITS = 50
MAX_RUNS = 5


class Held:
    """Every executor call waits until `release`: the accepted runs stay open."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._inner = research_scenario()

    def __call__(self, request: SimRequest) -> SimReply:
        if "Step to execute:" in request.prompt:
            self.release.wait(120)
        return self._inner(request)


@pytest.fixture
def stores_env(env: dict[str, str], postgres_url: str, redis_url: str) -> dict[str, str]:
    """`env` for processes that share one Postgres database and one Redis."""
    return {**env, "LATS_DATABASE_URL": postgres_url, "LATS_REDIS_URL": redis_url}


@contextmanager
def _two_on_the_simulator(
    procs: list[ServerProcess], env: dict[str, str], script: Script, settings: dict[str, str]
) -> Iterator[tuple[GeminiSimulator, ServerProcess, ServerProcess]]:
    """Two processes serving side by side on `env` with `settings` over it, their model the
    Gemini simulator answering with `script`: the simulator and the two."""
    with GeminiSimulator(script) as sim:
        shared = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url, **settings}
        a, b = start_side_by_side(procs, shared, ("serve",), ("serve",))
        yield sim, a, b


def test_fifty_submits_across_two_processes_pass_a_run_limit_of_five_exactly_five_times(
    stores_env: dict[str, str], procs: list[ServerProcess]
) -> None:
    script = Held()
    limits = {
        "LATS_API_KEYS": KEY,
        "LATS_MAX_RUNS_PER_KEY": str(MAX_RUNS),
        "LATS_KEY_RPS": "1000",
        "LATS_KEY_BURST": "1000",
    }
    with _two_on_the_simulator(procs, stores_env, script, limits) as (_, a, b):

        def submit(index: int) -> int:
            url = (a, b)[index % 2].url
            with httpx.Client(base_url=url, timeout=60) as client:
                return client.post("/runs", json=BODY, headers=HEADERS).status_code

        with ThreadPoolExecutor(SUBMITS) as pool:
            codes = list(pool.map(submit, range(SUBMITS)))
        with httpx.Client(base_url=a.url, timeout=60) as client:
            listed = client.get("/runs", headers=HEADERS).json()["runs"]
        script.release.set()

    assert codes.count(202) == MAX_RUNS, codes
    assert codes.count(429) == SUBMITS - MAX_RUNS, codes
    assert len(listed) == MAX_RUNS


def test_a_keys_request_burst_is_shared_by_the_processes(
    env: dict[str, str], procs: list[ServerProcess], redis_url: str
) -> None:
    shared = {
        **env,
        "LATS_REDIS_URL": redis_url,
        "LATS_API_KEYS": KEY,
        "LATS_KEY_RPS": "0.01",
        "LATS_KEY_BURST": "6",
    }
    a, b = start_side_by_side(procs, shared, ("serve",), ("serve",))

    codes = []
    for index in range(10):
        with httpx.Client(base_url=(a, b)[index % 2].url, timeout=30) as client:
            codes.append(client.get("/runs", headers=HEADERS).status_code)

    # Six between them, then refused on both: per process each would have allowed six.
    assert codes == [200] * 6 + [429] * 4, codes


class Overlap:
    """The research scenario, each call held 0.2 s; counts the calls in its hands at once."""

    def __init__(self) -> None:
        self._inner = research_scenario()
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __call__(self, request: SimRequest) -> SimReply:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.2)
            return self._inner(request)
        finally:
            with self._lock:
                self.now -= 1


def test_the_models_in_flight_cap_holds_for_both_processes_together(
    stores_env: dict[str, str], procs: list[ServerProcess]
) -> None:
    script = Overlap()
    limits = {
        # A model name of this test's own: its shared cap starts afresh in the machine's Redis.
        "LATS_MODEL": f"google_genai:gemini-cap-{uuid.uuid4().hex[:8]}",
        "LATS_API_KEYS": CAP_KEY,
        "LATS_KEY_RPS": "1000",  # the test polls six runs' statuses
        "LATS_KEY_BURST": "1000",
        "LATS_MODEL_MAX_IN_FLIGHT": "2",
        "LATS_MAX_ACTIVE_RUNS": "4",
    }
    with _two_on_the_simulator(procs, stores_env, script, limits) as (sim, a, b):
        body = {**BODY, "max_concurrency": 4}
        ids = []
        for index in range(6):
            with httpx.Client(base_url=(a, b)[index % 2].url, timeout=30) as client:
                answer = client.post("/runs", json=body, headers=CAP_HEADERS)
                assert answer.status_code == 202, answer.text
                ids.append(answer.json()["run_id"])

        def statuses() -> list[str]:
            with httpx.Client(base_url=a.url, timeout=30) as client:
                return [client.get(f"/runs/{i}", headers=CAP_HEADERS).json()["status"] for i in ids]

        ended = ("done", "error", "cancelled")
        wait_for(lambda: all(s in ended for s in statuses()), "every run's end", 180)
        calls = len(sim.requests)

    assert statuses() == ["done"] * 6
    assert calls >= 12  # enough calls were sent side by side to fill the cap many times
    # Each process alone allows 2; the cap is the deployment's, so the simulator never held more.
    assert script.most == 2
