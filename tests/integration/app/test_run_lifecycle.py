"""Cancellation at every stage, the bounded queue, heartbeats, and runs outliving clients."""

from __future__ import annotations

import httpx

from app.http.sse import FrameReader, aframes
from testkit.gate import TREE_TO_B as TREE
from testkit.gate import Gate
from tests.support.held_runs import service_with_held_run
from tests.support.makers import ServiceMaker

BODY = {"task": "t", "max_paths": 1}


async def _terminal(client: httpx.AsyncClient, run_id: str) -> list[str]:
    async with client.stream("GET", f"/runs/{run_id}/events") as response:
        return [frame.event async for frame in aframes(response.aiter_lines())]


async def test_cancel_during_a_run_stops_its_calls_and_ends_with_cancelled(
    service_for: ServiceMaker,
) -> None:
    async with service_with_held_run(service_for, BODY) as (svc, gate, run_id):
        cancelled = await svc.client.post(f"/runs/{run_id}/cancel")
        again = await svc.client.post(f"/runs/{run_id}/cancel")
        types = await _terminal(svc.client, run_id)

    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert again.json()["status"] == "cancelled"
    assert gate.cancelled == 1
    assert types[-1] == "cancelled"
    assert types.count("cancelled") == 1


async def test_cancel_before_start_ends_a_queued_run(service_for: ServiceMaker) -> None:
    async with service_with_held_run(service_for, BODY, max_active_runs=1) as (svc, gate, first):
        queued = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        status_before = (await svc.client.get(f"/runs/{queued}")).json()["status"]
        cancelled = (await svc.client.post(f"/runs/{queued}/cancel")).json()
        types = await _terminal(svc.client, queued)
        gate.release.set()
        first_types = await _terminal(svc.client, first)

    assert status_before == "queued"
    assert cancelled["status"] == "cancelled"
    assert types == ["run_started", "cancelled"]
    assert first_types[-1] == "done"
    planner_calls = svc.models.recorder.by_role("planner")
    assert len(planner_calls) == 1  # the queued run never reached the engine


async def test_cancel_after_the_end_is_a_no_op(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        done = await svc.client.post("/solve", json=BODY, headers={"Accept": "application/json"})
        response = await svc.client.post(f"/runs/{done.json()['run_id']}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "done"
    assert response.json()["answer"] == done.json()["answer"]


async def test_a_full_queue_answers_429_with_retry_after(service_for: ServiceMaker) -> None:
    held = service_with_held_run(service_for, BODY, max_active_runs=1, max_queued_runs=1)
    async with held as (svc, gate, _):
        second = await svc.client.post("/runs", json=BODY)
        third = await svc.client.post("/runs", json=BODY)
        gate.release.set()

    assert second.status_code == 202
    assert third.status_code == 429
    assert third.headers["retry-after"] == "5"
    assert third.json()["code"] == "queue_full"


async def test_an_idle_stream_sends_heartbeat_comments(service_for: ServiceMaker) -> None:
    gate = Gate()
    async with service_for(gate, sse_heartbeat_s=0.05) as svc:
        run_id = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        lines: list[str] = []  # the raw lines: the reader skips comments, heartbeats too
        reader = FrameReader()
        types: list[str] = []
        async with svc.client.stream("GET", f"/runs/{run_id}/events") as response:
            async for line in response.aiter_lines():
                lines.append(line)
                if lines.count(": heartbeat") >= 2:
                    gate.release.set()
                if (frame := reader.feed(line)) is not None:
                    types.append(frame.event)
                    if frame.event == "done":
                        break

    assert lines.count(": heartbeat") >= 2
    assert types[-1] == "done"


async def test_a_client_that_disconnects_does_not_stop_the_run(
    service_for: ServiceMaker,
) -> None:
    gate = Gate()
    async with service_for(gate) as svc:
        async with svc.client.stream("POST", "/solve", json=BODY) as response:
            async for frame in aframes(response.aiter_lines()):
                run_id = frame.json()["run_id"]
                break
        await gate.reached()
        gate.release.set()
        types = await _terminal(svc.client, run_id)
        run = (await svc.client.get(f"/runs/{run_id}")).json()

    assert types[-1] == "done"
    assert run["status"] == "done"
