"""POST /solve, POST /runs and following runs over a real HTTP connection."""

from __future__ import annotations

import json
from typing import Any

import httpx

from app.http.sse import aframes
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})
BODY = {"task": "What is B?", "max_paths": 2, "strategy": "mcts"}


async def _read_sse(
    client: httpx.AsyncClient, method: str, url: str, **kw: Any
) -> tuple[httpx.Response, list[tuple[int, str, dict[str, Any]]]]:
    out = []
    async with client.stream(method, url, **kw) as response:
        async for frame in aframes(response.aiter_lines()):
            assert frame.id is not None  # every event of a run's stream is numbered
            out.append((frame.id, frame.event, frame.json()))
        return response, out


async def test_solve_streams_numbered_events_from_run_started_to_done(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        response, events = await _read_sse(svc.client, "POST", "/solve", json=BODY)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    run_id = events[0][2]["run_id"]
    assert response.headers["content-location"] == f"/runs/{run_id}"
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
    assert events[0][1] == "run_started"
    assert events[-1][1] == "done"
    assert [t for _, t, _ in events].count("done") == 1
    assert events[-1][2]["answer"] in {"answer via B", "answer via C"}


async def test_solve_with_accept_json_waits_and_returns_the_run(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        response = await svc.client.post(
            "/solve", json=BODY, headers={"Accept": "application/json"}
        )

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "done"
    assert body["stop_reason"] == "max_paths"
    assert [n["step"] for n in body["nodes"]] == ["A", "B", "C"]
    assert body["metrics"]["paths_completed"] == 2


async def test_background_run_then_follow_and_look_up(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        started = await svc.client.post("/runs", json=BODY)
        run_id = started.json()["run_id"]
        _, events = await _read_sse(svc.client, "GET", f"/runs/{run_id}/events")
        run = (await svc.client.get(f"/runs/{run_id}")).json()
        trace = await svc.client.get(f"/runs/{run_id}/trace")

    assert started.status_code == 202
    assert started.headers["location"] == f"/runs/{run_id}"
    assert events[-1][1] == "done"
    assert run["status"] == "done"
    assert run["answer"] == events[-1][2]["answer"]
    lines = [json.loads(line) for line in trace.text.splitlines()]
    assert [line["id"] for line in lines] == [seq for seq, _, _ in events]
    assert lines[0]["event"]["type"] == "run_started"


async def test_rejoining_with_last_event_id_continues_without_gaps_or_duplicates(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        first: list[int | None] = []
        async with svc.client.stream("POST", "/solve", json=BODY) as response:
            async for frame in aframes(response.aiter_lines()):
                first.append(frame.id)
                run_id = frame.json()["run_id"]
                if len(first) == 3:
                    break  # the client goes away mid-run
        _, rest = await _read_sse(
            svc.client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": "3"}
        )
        _, again = await _read_sse(svc.client, "GET", f"/runs/{run_id}/events?after=5")

    assert first == [1, 2, 3]
    assert [seq for seq, _, _ in rest] == list(range(4, 4 + len(rest)))
    assert rest[-1][1] == "done"
    assert [seq for seq, _, _ in again] == [seq for seq, _, _ in rest if seq > 5]


async def test_runs_are_listed_newest_first_with_status_filter_and_pages(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        ids = []
        for _ in range(3):
            response = await svc.client.post(
                "/solve", json=BODY, headers={"Accept": "application/json"}
            )
            ids.append(response.json()["run_id"])
        page1 = (await svc.client.get("/runs?limit=2")).json()
        page2 = (await svc.client.get(f"/runs?limit=2&offset={page1['next_offset']}")).json()
        failed = (await svc.client.get("/runs?status=failed")).json()

    assert [r["run_id"] for r in page1["runs"]] == ids[::-1][:2]
    assert [r["run_id"] for r in page2["runs"]] == ids[:1]
    assert page2["next_offset"] is None
    assert failed["runs"] == []
    assert page1["runs"][0]["nodes"] is None
