"""Per-key limits: runs queued or running, requests per second, open event streams; and resume
points beyond a run's last event, refused before any stream starts."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from app.http.sse import aframes, frames
from testkit.gate import TREE_TO_B as TREE
from testkit.gate import Gate
from tests.support.makers import ServiceMaker

BODY = {"task": "t", "max_paths": 1}
A, B, ADMIN = "key-a-1f", "key-b-2e", "key-admin-3d"
KEYS = {"api_keys": [SecretStr(f"a:{A}"), SecretStr(f"b:{B}")], "admin_key": SecretStr(ADMIN)}


def as_(key: str) -> dict[str, str]:
    return {"X-API-Key": key}


def assert_limited(response: httpx.Response, code: str) -> None:
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) >= 1
    body = response.json()
    assert body["code"] == code
    assert set(body) == {"code", "message"}


async def test_a_key_at_its_run_limit_gets_429_while_another_key_starts_runs(
    service_for: ServiceMaker,
) -> None:
    gate = Gate()  # holds every run at step B: they stay running
    async with service_for(gate, max_runs_per_key=2, **KEYS) as svc:
        first = [await svc.client.post("/runs", json=BODY, headers=as_(A)) for _ in range(2)]
        third = await svc.client.post("/runs", json=BODY, headers=as_(A))
        streamed = await svc.client.post("/solve", json=BODY, headers=as_(A))
        other = await svc.client.post("/runs", json=BODY, headers=as_(B))
        listed = (await svc.client.get("/runs", headers=as_(A))).json()["runs"]
        gate.release.set()

    assert [r.status_code for r in first] == [202, 202]
    assert_limited(third, "too_many_runs")
    assert_limited(streamed, "too_many_runs")
    assert other.status_code == 202
    assert len(listed) == 2


async def test_a_key_beyond_its_request_rate_gets_429_others_do_not(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, key_rps=0.01, key_burst=3, **KEYS) as svc:
        allowed = [(await svc.client.get("/runs", headers=as_(A))).status_code for _ in range(3)]
        refused = await svc.client.get("/runs", headers=as_(A))
        other = await svc.client.get("/runs", headers=as_(B))
        admin = [(await svc.client.get("/runs", headers=as_(ADMIN))).status_code for _ in range(5)]
        metrics = (await svc.client.get("/metrics", headers=as_(ADMIN))).text

    assert allowed == [200, 200, 200]
    assert_limited(refused, "too_many_requests")
    assert other.status_code == 200
    assert admin == [200] * 5
    assert 'plantree_key_limited_total{caller="a",limit="requests"}' in metrics
    assert A not in metrics


async def test_a_key_beyond_its_open_streams_gets_429_and_the_slot_frees_at_the_end(
    service_for: ServiceMaker,
) -> None:
    gate = Gate()
    async with service_for(gate, key_max_streams=1, **KEYS) as svc:
        run_a = (await svc.client.post("/runs", json=BODY, headers=as_(A))).json()["run_id"]
        run_b = (await svc.client.post("/runs", json=BODY, headers=as_(B))).json()["run_id"]
        async with svc.client.stream("GET", f"/runs/{run_a}/events", headers=as_(A)) as held:
            assert held.status_code == 200
            second = await svc.client.get(f"/runs/{run_a}/events", headers=as_(A))
            solve = await svc.client.post("/solve", json=BODY, headers=as_(A))
            runs_of_a = (await svc.client.get("/runs", headers=as_(A))).json()["runs"]
            async with svc.client.stream("GET", f"/runs/{run_b}/events", headers=as_(B)) as other:
                other_status = other.status_code
                gate.release.set()
                other_types = [f.event async for f in aframes(other.aiter_lines())]
            held_types = [f.event async for f in aframes(held.aiter_lines())]
        again = await svc.client.get(f"/runs/{run_a}/events", headers=as_(A))

    assert_limited(second, "too_many_streams")
    assert_limited(solve, "too_many_streams")
    assert [r["run_id"] for r in runs_of_a] == [run_a]  # the refused /solve started no run
    assert other_status == 200
    assert other_types[-1] == held_types[-1] == "done"
    assert again.status_code == 200


async def test_a_resume_point_beyond_the_last_event_is_422_before_any_stream(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        run_id = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        whole = await svc.client.get(f"/runs/{run_id}/events")
        last = [f.id for f in frames(whole.text.splitlines())][-1]
        assert last is not None
        at_end = await svc.client.get(f"/runs/{run_id}/events?after={last}")
        beyond = await svc.client.get(f"/runs/{run_id}/events?after={last + 1}")
        header = await svc.client.get(
            f"/runs/{run_id}/events", headers={"Last-Event-ID": str(last + 5)}
        )
        huge = await svc.client.get(f"/runs/{run_id}/events?after=10000001")
        huge_header = await svc.client.get(
            f"/runs/{run_id}/events", headers={"Last-Event-ID": "99999999999"}
        )

    assert at_end.status_code == 200
    assert list(frames(at_end.text.splitlines())) == []  # the reader has the end already
    for refused in (beyond, header, huge, huge_header):
        assert refused.status_code == 422
        assert refused.headers["content-type"] == "application/json"
        assert refused.json()["code"] == "invalid_request"
    assert header.json()["fields"][0]["loc"] == ["header", "last-event-id"]
    assert beyond.json()["fields"][0]["loc"] == ["query", "after"]


async def test_the_trace_streams_every_event_in_order(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        run_id = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        events = await svc.client.get(f"/runs/{run_id}/events")
        ids = [f.id for f in frames(events.text.splitlines())]
        async with svc.client.stream("GET", f"/runs/{run_id}/trace") as trace:
            lines = [line async for line in trace.aiter_lines() if line]

    assert trace.headers["content-type"] == "application/x-ndjson"
    assert "content-length" not in trace.headers  # streamed, not built whole
    assert [int(line.split(",", 1)[0].removeprefix('{"id": ')) for line in lines] == ids


async def test_pages_of_the_trace_join_without_gaps(
    service_for: ServiceMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.access.run_access.TRACE_PAGE", 2)  # several pages for a short run
    async with service_for(TREE) as svc:
        run_id = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        await svc.client.get(f"/runs/{run_id}/events")
        trace = (await svc.client.get(f"/runs/{run_id}/trace")).text

    ids = [int(line.split(",", 1)[0].removeprefix('{"id": ')) for line in trace.splitlines()]
    assert ids == list(range(1, len(ids) + 1))
    assert len(ids) > 4
