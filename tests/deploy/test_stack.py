"""The compose stack running for real: a task solved through the published API port, and a
Postgres restart in the middle of a run."""

from __future__ import annotations

import json

import httpx

from app.http.sse import frames
from tests.support.deploy import Stack, follow, new_task, start_executing


def test_a_solve_through_the_published_port_streams_to_done(stack: Stack) -> None:
    kinds: list[str] = []
    with (
        httpx.Client(base_url=stack.url, timeout=120) as client,
        client.stream("POST", "/solve", json=new_task()) as reply,
    ):
        status = reply.status_code
        kinds = [frame.event for frame in frames(reply.iter_lines())]

    assert status == 200
    assert kinds[-1] == "done"
    assert "error" not in kinds


def test_a_postgres_restart_mid_run_ends_the_run(stack: Stack) -> None:
    run_id = start_executing(stack.url, new_task())
    stack.compose("restart", "db", timeout=60)

    events = follow(stack.url, run_id, timeout=120)
    _, kind, data = events[-1]

    assert kind in ("done", "error"), json.dumps(events[-3:])
    if kind == "error":
        assert data.get("message"), data  # a clear error, not a silent end


def test_every_request_after_a_postgres_restart_succeeds(stack: Stack) -> None:
    stack.compose("restart", "db", timeout=60)
    stack.compose("up", "-d", "--no-build", "--wait", "db", timeout=120)

    with httpx.Client(base_url=stack.url, timeout=30) as client:
        statuses = [client.get("/runs").status_code for _ in range(5)]

    assert statuses == [200] * 5
