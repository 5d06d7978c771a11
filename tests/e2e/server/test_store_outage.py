"""Postgres unreachable under a running service: the API answers 503 with `Retry-After`,
`/readyz` says not ready, runs in flight hold their writes and go on when the database
returns, with whole histories. The database is cut by a TCP proxy the test owns (the machine's
Postgres itself is never stopped)."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from testkit.events import Event, read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.process import ServerProcess
from testkit.storm import BODY
from testkit.tcp_proxy import TcpProxy
from testkit.waiting import wait_for
from tests.support.storm import assert_whole_history

logger = logging.getLogger(__name__)
pytestmark = pytest.mark.timeout(300)

RUNS = 2
HELD_STEP = "Step to execute: Summarise them"


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[TcpProxy]:
    """A proxy in front of the test's Postgres database."""
    with TcpProxy.before(postgres_url) as proxy:
        yield proxy


class HeldSteps:
    """The research scenario, every run's executor of the held step waiting until `release`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = threading.Semaphore(0)
        self._inner = research_scenario()

    def __call__(self, request: SimRequest) -> SimReply:
        if HELD_STEP in request.prompt and not request.function_responses:
            self.held.release()
            self.release.wait(120)
        return self._inner(request)


def start_runs(url: str) -> list[str]:
    with httpx.Client(timeout=30) as client:
        return [
            client.post(
                f"{url}/runs",
                json={**BODY, "task": f"{BODY['task']} ({uuid.uuid4().hex})", "use_cache": False},
            ).json()["run_id"]
            for _ in range(RUNS)
        ]


@pytest.fixture
def proxied_env(env: dict[str, str], postgres_url: str, proxy: TcpProxy) -> dict[str, str]:
    """The service's environment with its database reached through `proxy`."""
    return {**env, "LATS_DATABASE_URL": proxy.through(postgres_url)}


@contextlib.contextmanager
def outage_under_held_runs(
    procs: list[ServerProcess], env: dict[str, str], proxy: TcpProxy, outage_s: str
) -> Iterator[tuple[ServerProcess, list[str]]]:
    """A service on a simulator of `HeldSteps`, waiting out outages up to `outage_s`, with
    `RUNS` runs each held at its held step; then the database is cut at `proxy` and the held
    steps answer, so the runs' next writes meet the outage: the service and the runs' ids."""
    script = HeldSteps()
    with GeminiSimulator(script) as sim:
        service = ServerProcess(
            {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url, "LATS_STORE_OUTAGE_S": outage_s}
        )
        procs.append(service)
        service.start(timeout_s=180)
        run_ids = start_runs(service.url)
        for _ in run_ids:
            assert script.held.acquire(timeout=60)
        proxy.cut()
        script.release.set()
        yield service, run_ids


def histories(service: ServerProcess, run_ids: list[str]) -> list[list[Event]]:
    """Every run's events, each read to its end side by side."""
    with ThreadPoolExecutor(RUNS) as pool:
        return list(pool.map(lambda run_id: read_events(service.url, run_id), run_ids))


def test_runs_in_flight_wait_out_a_postgres_outage_and_the_api_answers_503_meanwhile(
    proxied_env: dict[str, str], procs: list[ServerProcess], proxy: TcpProxy
) -> None:
    with outage_under_held_runs(procs, proxied_env, proxy, "60") as (service, run_ids):
        with (
            httpx.Client(base_url=service.url, timeout=60) as client,
            ThreadPoolExecutor(3) as pool,
        ):
            during = list(
                pool.map(
                    lambda call: call(),
                    [
                        lambda: client.get(f"/runs/{run_ids[0]}"),
                        lambda: client.post("/runs", json=BODY),
                        lambda: client.get("/readyz"),
                    ],
                )
            )
        wait_for(
            lambda: all(f"run={run_id} store unreachable" in service.log() for run_id in run_ids),
            "the runs' writes to pause",
        )
        proxy.restore()
        ended = histories(service, run_ids)
        ready = httpx.get(f"{service.url}/readyz", timeout=30)

    read, submit, readiness = during
    for response in (read, submit):
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"].isdigit()
        assert response.json()["code"] == "store_unavailable"
    assert readiness.status_code == 503
    assert readiness.json()["checks"]["database"] == "unreachable"
    assert ready.status_code == 200, ready.text
    for run_id, events in zip(run_ids, ended, strict=True):
        terminal = assert_whole_history(service.url, run_id, events)
        assert terminal == "done", (events[-1], service.log()[-3000:])
    assert all(f"run={run_id} store back" in service.log() for run_id in run_ids)
    assert "Traceback" not in service.log(), service.log()


def test_runs_stopped_by_an_outage_longer_than_their_wait_are_resumed_when_it_ends(
    proxied_env: dict[str, str], procs: list[ServerProcess], proxy: TcpProxy
) -> None:
    with outage_under_held_runs(procs, proxied_env, proxy, "1") as (service, run_ids):
        wait_for(
            lambda: all(f"run={run_id} stops here" in service.log() for run_id in run_ids),
            "the runs to stop on the outage",
        )
        proxy.restore()
        ended = histories(service, run_ids)

    for run_id, events in zip(run_ids, ended, strict=True):
        terminal = assert_whole_history(service.url, run_id, events)
        assert terminal == "done", (events[-1], service.log()[-3000:])
        assert f"run={run_id} claimed by owner={service.owner}" in service.log()
    assert "Traceback" not in service.log(), service.log()
