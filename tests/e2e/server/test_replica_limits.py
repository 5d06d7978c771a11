"""A key's limits across two API processes on one Postgres and one Redis: 50 concurrent submits
against a run limit of 5 are accepted exactly 5 times between them, and a burst of requests
beyond the key's rate is refused once for both, not once per process."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess, start_side_by_side
from testkit.storm import BODY

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

# A key name of this test run's own: the limits it fills in the machine's Redis are its own.
NAME = f"alice-{uuid.uuid4().hex[:8]}"
KEY = f"{NAME}:key-a-1f"
HEADERS = {"X-API-Key": "key-a-1f"}
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


def test_fifty_submits_across_two_processes_pass_a_run_limit_of_five_exactly_five_times(
    env: dict[str, str],
    procs: list[ServerProcess],
    postgres_url: str,
    redis_url: str,
) -> None:
    script = Held()
    with GeminiSimulator(script) as sim:
        shared = {
            **env,
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATABASE_URL": postgres_url,
            "LATS_REDIS_URL": redis_url,
            "LATS_API_KEYS": KEY,
            "LATS_MAX_RUNS_PER_KEY": str(MAX_RUNS),
            "LATS_KEY_RPS": "1000",
            "LATS_KEY_BURST": "1000",
        }
        a, b = start_side_by_side(procs, shared, ("serve",), ("serve",))

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
