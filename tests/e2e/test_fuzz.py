"""The HTTP API fuzzed from its own OpenAPI document (`/openapi.json`) with schemathesis, as
its command line does it: every operation, its documented examples, boundary and invalid values
(coverage), generated valid and invalid input (fuzzing), then call sequences along the schema's
links (a run started, then looked up, followed, traced, cancelled).

The server is a real process whose models are the real Gemini client against the simulator. It
is fuzzed without API keys configured, then with a key configured: once sending the key, once
sending none (every protected operation must refuse then).

Every response must hold: no 5xx, every 4xx a JSON `{code, message}` body, and headers within
`SLOW_S` (a check failing the one case, not a timing of the whole run). An event stream is read
for a bounded time and number of events only. Examples are bounded so the module stays within a
few minutes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from app.http.security_headers import API_CSP, COMMON_HEADERS
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess
from tests.support.sim_env import sim_service_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

KEY = "fuzz-key"
SLOW_S = 5.0
EXAMPLES = 30  # per operation and phase
STREAM_READ_S = 3.0  # an event stream is read this long at most
STREAM_EVENTS = 5  # ... and for this many events at most
KEY_HEADERS = ("authorization", "x-api-key")


@schemathesis.check
def error_body(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Every 4xx is JSON `{code, message}`, both non-empty strings."""
    if not 400 <= response.status_code < 500:
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), (
        f"a {response.status_code} as {content_type!r}"
    )
    body = response.json()
    assert isinstance(body, dict), f"the error body is not an object: {body!r}"
    for field in ("code", "message"):
        value = body.get(field)
        assert isinstance(value, str), f"no {field!r} in {body!r}"
        assert value, f"an empty {field!r} in {body!r}"


def needs_key(operation: schemathesis.APIOperation) -> bool:
    """The operation takes the API key (it documents the key's headers or a security scheme)."""
    definition = operation.definition.raw
    names = {str(p.get("name", "")).lower() for p in definition.get("parameters", [])}
    return bool(names & set(KEY_HEADERS)) or bool(definition.get("security"))


@schemathesis.check
def refused_without_key(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Enabled only where a key is configured and none is sent: a protected operation never
    answers 2xx. (A random key header the fuzzer sends is not a key either.)"""
    if needs_key(case.operation):
        assert not 200 <= response.status_code < 300, "served without an API key"


def server_env(sim_url: str, tmp: Path, keys: str) -> dict[str, str]:
    return {
        **sim_service_env(sim_url, tmp),
        "LATS_API_KEYS": keys,
        # A few runs at a time; the rest are refused (429) at once rather than queued.
        "LATS_MAX_ACTIVE_RUNS": "2",
        "LATS_MAX_QUEUED_RUNS": "0",
        "LATS_SSE_HEARTBEAT_S": "1",
    }


@pytest.fixture(scope="module")
def simulator() -> Iterator[GeminiSimulator]:
    with GeminiSimulator(research_scenario()) as sim:
        yield sim


@pytest.fixture(scope="module")
def open_server(
    simulator: GeminiSimulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("fuzz-open")
    process = ServerProcess(server_env(simulator.base_url, tmp, "")).start()
    yield process
    process.kill()


@pytest.fixture(scope="module")
def keyed_server(
    simulator: GeminiSimulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("fuzz-keyed")
    process = ServerProcess(server_env(simulator.base_url, tmp, KEY)).start()
    yield process
    process.kill()


class FuzzResult:
    """What one schemathesis run did: failures and errors as text, responses by operation."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.statuses: Counter[tuple[str, int]] = Counter()

    def operations(self) -> set[str]:
        return {label for label, _ in self.statuses}


def fuzz(
    server: ServerProcess, *, headers: dict[str, str], without_key: bool = False
) -> FuzzResult:
    checks: dict[str, Any] = {
        "enabled": False,
        "not_a_server_error": {"enabled": True},
        "max_response_time": SLOW_S,
        "error_body": {"enabled": True},
        "refused_without_key": {"enabled": without_key},
    }
    config = schemathesis.Config.from_dict(
        {
            "headers": headers,
            "request-timeout": STREAM_READ_S,
            "max-stream-events": STREAM_EVENTS,
            "generation": {"mode": "all", "max-examples": EXAMPLES, "deterministic": True},
            "checks": checks,
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": True, "max-steps": 6},
            },
        }
    )
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json", config=config)
    outcome = FuzzResult()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            for case_id, interaction in recorder.interactions.items():
                if interaction.response is not None:
                    label = recorder.cases[case_id].value.operation.label
                    outcome.statuses[(label, interaction.response.status_code)] += 1
            for case_checks in recorder.checks.values():
                for check in case_checks:
                    if check.status == Status.FAILURE and check.failure_info is not None:
                        failure = check.failure_info.failure
                        outcome.problems.append(
                            f"[{event.phase.value}] {recorder.label}: {check.name}: "
                            f"{failure.title}\n{failure.message}\n"
                            f"{check.failure_info.code_sample}"
                        )
        elif isinstance(event, events.NonFatalError):
            outcome.problems.append(f"error in {event.label}: {event.info}")
        elif isinstance(event, events.FatalError):
            outcome.problems.append(f"fatal: {event.exception!r}")
    return outcome


def assert_clean(outcome: FuzzResult, server: ServerProcess) -> None:
    assert not outcome.problems, "\n\n".join(outcome.problems[:20])
    assert sum(outcome.statuses.values()) > 500  # it did fuzz
    assert len(outcome.operations()) >= 13, outcome.operations()  # every operation
    # A failure after a response started (a stream) shows only here: the client sees a cut.
    for crash in ("Exception in ASGI application", "unhandled error"):
        assert crash not in server.log()


def test_fuzzing_without_api_keys(open_server: ServerProcess) -> None:
    outcome = fuzz(open_server, headers={})

    assert_clean(outcome, open_server)
    served = {label for (label, status) in outcome.statuses if 200 <= status < 300}
    assert {"POST /runs", "GET /runs/{run_id}", "POST /solve", "GET /runs"} <= served


def test_fuzzing_with_an_api_key(keyed_server: ServerProcess) -> None:
    outcome = fuzz(keyed_server, headers={"X-API-Key": KEY})

    assert_clean(outcome, keyed_server)
    served = {label for (label, status) in outcome.statuses if 200 <= status < 300}
    assert {"POST /runs", "GET /runs/{run_id}", "POST /solve", "GET /runs"} <= served


def test_fuzzing_with_keys_configured_and_none_sent(keyed_server: ServerProcess) -> None:
    outcome = fuzz(keyed_server, headers={}, without_key=True)

    assert_clean(outcome, keyed_server)
    assert ("POST /runs", 401) in outcome.statuses


def test_oversized_and_undecodable_bodies_get_json_errors(open_server: ServerProcess) -> None:
    """Bodies over the size limit (declared or streamed without a length) and bytes that are
    not JSON text: the framework answers these before any route runs."""
    oversized = b'{"task": "' + b"x" * 70_000 + b'"}'

    def chunks() -> Iterator[bytes]:
        yield oversized[:40_000]
        yield oversized[40_000:]

    json_type = {"content-type": "application/json"}
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        declared = client.post("/runs", content=oversized, headers=json_type)
        streamed = client.post("/runs", content=chunks(), headers=json_type)
        not_text = client.post("/runs", content=b"\xfd\xa5", headers=json_type)

    assert declared.status_code == streamed.status_code == 413
    assert declared.json()["code"] == streamed.json()["code"] == "too_large"
    assert declared.headers["content-length"] == str(len(declared.content))
    for name, value in {**COMMON_HEADERS, "content-security-policy": API_CSP}.items():
        assert declared.headers[name] == value  # the rewritten answer keeps its headers
    assert not_text.status_code == 400
    assert not_text.json()["code"] == "bad_request"


def start_run(client: httpx.Client) -> str:
    """A new run's id, once the runs the fuzzer started leave room for it."""
    for _ in range(120):
        accepted = client.post("/runs", json={"task": "a run", "max_paths": 1})
        if accepted.status_code != 429:
            break
        time.sleep(0.5)  # the queue is full: the fuzzer's runs are still going
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["run_id"])


def test_event_ids_beyond_64_bits_are_refused_or_ignored(open_server: ServerProcess) -> None:
    """Found by the fuzzer: such an id reached the store, which cannot hold it, and the stream
    broke off after its headers."""
    huge = str(2**64)
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        run_id = start_run(client)
        after = client.get(f"/runs/{run_id}/events", params={"after": huge})
        with client.stream(
            "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": huge}
        ) as replay:
            first = next(line for line in replay.iter_lines() if line and line[0] != ":")

    assert after.status_code == 422
    assert after.json()["code"] == "invalid_request"
    assert replay.status_code == 200
    assert first == "id: 1"  # an id this service never sent: the stream starts over
