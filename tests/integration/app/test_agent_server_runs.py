"""The Agent Server API's runs over the real app (its SQLite store, scripted models): a
thread takes one run at a time, a plan's answer goes to the thread's last waiting run, and a
stream ends at a pause, also one re-joined past the interrupt."""

from __future__ import annotations

from typing import Any

import httpx

from app.http.sse import Frame, aframes
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A", "B"], replans={"A": ["B"]})
ASK = {"messages": [{"type": "human", "content": "What is B?"}]}
APPROVE = {"max_paths": 1, "approve_plan": True}


async def _stream(client: httpx.AsyncClient, method: str, url: str, **options: Any) -> list[Frame]:
    async with client.stream(method, url, timeout=20, **options) as response:
        assert response.status_code == 200, await response.aread()
        return [frame async for frame in aframes(response.aiter_lines())]


async def _thread(client: httpx.AsyncClient) -> str:
    thread_id: str = (await client.post("/lg/threads", json={})).json()["thread_id"]
    return thread_id


async def _waiting(client: httpx.AsyncClient) -> tuple[str, str, list[Frame], int]:
    """A run streamed until it waits for its plan's answer: its thread, its id, its frames
    and its last event id."""
    tid = await _thread(client)
    body = {"input": ASK, "context": APPROVE, "stream_mode": ["updates"]}
    first = await _stream(client, "POST", f"/lg/threads/{tid}/runs/stream", json=body)
    run_id = first[0].json()["run_id"]
    return tid, run_id, first, max(f.id for f in first if f.id is not None)


async def test_a_plan_waits_then_its_answer_streams_the_resumed_run(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        tid, run_id, first, last = await _waiting(svc.client)
        joined = await _stream(
            svc.client,
            "GET",
            f"/lg/threads/{tid}/runs/{run_id}/stream",
            headers={"Last-Event-ID": str(last)},
        )
        command = {"command": {"resume": {"action": "approve"}}, "stream_mode": ["values"]}
        resumed = await _stream(svc.client, "POST", f"/lg/threads/{tid}/runs/stream", json=command)

    assert first[-1].event == "end"
    assert "__interrupt__" in first[-2].json()
    assert [f.event for f in joined] == ["metadata", "end"]
    assert resumed[0].json()["run_id"] == run_id
    assert resumed[-2].json()["status"] == "done"
    assert resumed[-1].event == "end"


async def test_a_thread_takes_one_run_at_a_time(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc:
        tid = await _thread(svc.client)
        body = {"input": ASK, "context": APPROVE}
        await svc.client.post(f"/lg/threads/{tid}/runs/wait", json=body, timeout=20)
        second = await svc.client.post(f"/lg/threads/{tid}/runs", json={"input": ASK})

    assert second.status_code == 409
    assert second.json()["code"] == "thread_not_finished"


async def test_an_answer_on_a_thread_with_no_waiting_run_is_409(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        tid = await _thread(svc.client)
        command = {"command": {"resume": {"action": "approve"}}}
        refused = await svc.client.post(f"/lg/threads/{tid}/runs", json=command)

    assert refused.status_code == 409
    assert refused.json()["code"] == "run_not_waiting"


async def test_re_joining_past_the_run_s_last_event_is_422_before_any_stream(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        tid, run_id, _, last = await _waiting(svc.client)
        url = f"/lg/threads/{tid}/runs/{run_id}/stream"
        at_end = await _stream(svc.client, "GET", url, headers={"Last-Event-ID": str(last)})
        beyond = await svc.client.get(url, headers={"Last-Event-ID": str(last + 1)})

    assert [f.event for f in at_end] == ["metadata", "end"]
    assert beyond.status_code == 422
    assert beyond.json()["code"] == "invalid_request"
    assert beyond.json()["fields"][0]["loc"] == ["header", "last-event-id"]
    assert beyond.json()["fields"][0]["msg"] == "beyond the run's last event id"
