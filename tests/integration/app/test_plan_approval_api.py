"""Plan approval through the HTTP API (the real app, its SQLite store and checkpointer,
scripted models): a run with `approve_plan` stops `interrupted` after an `interrupt` event with
its plan, holds no slot and makes no call while it waits, and goes on when answered at
POST /runs/{id}/resume (approved, edited, or rejected: then `cancelled` with no search call),
also after the service was restarted."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from app.http.sse import aframes
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.mcp import mcp_session
from tests.support.server import Service

TREE = Scenario(plan=["A", "B"], replans={"A": ["B"]})
BODY = {"task": "What is B?", "max_paths": 1, "approve_plan": True}


async def events_until(client: httpx.AsyncClient, run_id: str, last: str) -> list[dict[str, Any]]:
    """The run's events from the first, read until one of type `last`."""
    seen: list[dict[str, Any]] = []
    async with client.stream("GET", f"/runs/{run_id}/events", timeout=20) as response:
        async for frame in aframes(response.aiter_lines()):
            seen.append(frame.json())
            if frame.event == last:
                break
    return seen


async def waiting_run(client: httpx.AsyncClient) -> tuple[str, list[dict[str, Any]]]:
    run_id: str = (await client.post("/runs", json=BODY)).json()["run_id"]
    return run_id, await events_until(client, run_id, "interrupt")


@contextlib.asynccontextmanager
async def waiting_service(service_for: ServiceMaker) -> AsyncIterator[tuple[Service, str]]:
    """A service of TREE holding one run waiting at its plan, and that run's id."""
    async with service_for(TREE) as svc:
        run_id, _ = await waiting_run(svc.client)
        yield svc, run_id


async def test_a_run_waits_at_its_plan_without_calls_then_runs_it_when_approved(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, max_active_runs=1) as svc:
        run_id, before = await waiting_run(svc.client)
        waiting = (await svc.client.get(f"/runs/{run_id}")).json()
        calls_while_waiting = [c.role for c in svc.models.recorder.calls]
        listed = (await svc.client.get("/runs", params={"status": "interrupted"})).json()
        # The one execution slot is free while the run waits: another run goes through it.
        other = (await svc.client.post("/runs", json={"task": "t", "max_paths": 1})).json()
        other_events = await events_until(svc.client, other["run_id"], "done")
        resumed = await svc.client.post(f"/runs/{run_id}/resume", json={"action": "approve"})
        after = await events_until(svc.client, run_id, "done")
        again = await svc.client.post(f"/runs/{run_id}/resume", json={"action": "approve"})

    assert [e["type"] for e in before][-2:] == ["plan", "interrupt"]
    assert before[-1]["steps"] == ["A", "B"]
    assert (waiting["status"], waiting["awaiting"]) == ("interrupted", "plan")
    assert calls_while_waiting == ["planner"]
    assert [r["run_id"] for r in listed["runs"]] == [run_id]
    assert other_events[-1]["type"] == "done"
    assert resumed.status_code == 200
    assert resumed.json()["status"] == "queued"
    types = [e["type"] for e in after]
    assert types.count("interrupt") == 1
    assert types[types.index("interrupt") + 1] == "plan_reviewed"
    assert types[-1] == "done"
    assert again.status_code == 409
    assert again.json()["code"] == "run_not_waiting"


async def test_a_rejected_plan_ends_the_run_cancelled_without_a_search_call(
    service_for: ServiceMaker,
) -> None:
    async with waiting_service(service_for) as (svc, run_id):
        await svc.client.post(f"/runs/{run_id}/resume", json={"action": "reject"})
        after = await events_until(svc.client, run_id, "cancelled")
        run = (await svc.client.get(f"/runs/{run_id}")).json()

    assert [c.role for c in svc.models.recorder.calls] == ["planner"]
    assert after[-1]["reason"] == "the plan was rejected"
    assert run["status"] == "cancelled"
    assert run["awaiting"] is None


async def test_an_edited_plan_is_followed_after_a_restart_of_the_service(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as first:
        run_id, _ = await waiting_run(first.client)
    async with service_for(TREE) as second:
        still = (await second.client.get(f"/runs/{run_id}")).json()
        idle_calls = list(second.models.recorder.calls)
        edit = {"action": "edit", "steps": ["C"]}
        await second.client.post(f"/runs/{run_id}/resume", json=edit)
        after = await events_until(second.client, run_id, "done")
        run = (await second.client.get(f"/runs/{run_id}")).json()

    assert (still["status"], still["awaiting"]) == ("interrupted", "plan")
    assert idle_calls == []  # the restarted service does not pick a waiting run up
    assert "planner" not in [c.role for c in second.models.recorder.calls]
    assert after[-1]["answer"] == "answer via C"
    assert [n["step"] for n in run["nodes"]] == ["C"]


async def test_a_cancel_ends_a_waiting_run(service_for: ServiceMaker) -> None:
    async with waiting_service(service_for) as (svc, run_id):
        cancelled = await svc.client.post(f"/runs/{run_id}/cancel")

    assert cancelled.json()["status"] == "cancelled"


async def test_answers_that_make_no_sense_are_422_and_a_run_not_waiting_409(
    service_for: ServiceMaker,
) -> None:
    async with waiting_service(service_for) as (svc, run_id):
        bad = [
            await svc.client.post(f"/runs/{run_id}/resume", json=body)
            for body in (
                {"action": "edit"},
                {"action": "approve", "steps": ["X"]},
                {"action": "edit", "steps": []},
                {"action": "edit", "steps": ["  "]},
                {"action": "edit", "steps": ["x" * 501]},
                {"action": "maybe"},
                {"action": "approve", "by": "someone else"},
            )
        ]
        plain = (await svc.client.post("/runs", json={"task": "t", "max_paths": 1})).json()
        await events_until(svc.client, plain["run_id"], "done")
        not_waiting = await svc.client.post(
            f"/runs/{plain['run_id']}/resume", json={"action": "approve"}
        )
        missing = await svc.client.post("/runs/nope/resume", json={"action": "approve"})

    assert [r.status_code for r in bad] == [422] * 7
    assert {r.json()["code"] for r in bad} == {"invalid_request"}
    assert not_waiting.status_code == 409
    assert missing.status_code == 404


async def test_the_openai_compatible_endpoint_refuses_plan_approval(
    service_for: ServiceMaker,
) -> None:
    body = {
        "model": "plantree",
        "messages": [{"role": "user", "content": "What is B?"}],
        "plantree": {"approve_plan": True},
    }
    async with service_for(TREE) as svc:
        refused = await svc.client.post("/v1/chat/completions", json=body)

    assert refused.status_code == 422
    assert refused.json()["fields"][0]["loc"] == ["body", "approve_plan"]
    assert svc.models.recorder.calls == []


async def test_solve_waiting_for_json_returns_the_run_once_it_waits(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE) as svc:
        response = await svc.client.post(
            "/solve", json=BODY, headers={"Accept": "application/json"}, timeout=20
        )

    run = response.json()
    assert response.status_code == 200
    assert (run["status"], run["awaiting"]) == ("interrupted", "plan")
    assert [n["step"] for n in run["nodes"]] == ["A"]


async def test_on_postgres_a_waiting_plan_survives_a_restart_and_a_follow_up_thread_recalls(
    service_for: ServiceMaker, postgres_url: str
) -> None:
    async with service_for(TREE, database_url=postgres_url) as first:
        thread_id = (await first.client.post("/threads")).json()["thread_id"]
        body = {**BODY, "thread_id": thread_id}
        run_id = (await first.client.post("/runs", json=body)).json()["run_id"]
        await events_until(first.client, run_id, "interrupt")
    async with service_for(TREE, database_url=postgres_url) as second:
        idle = list(second.models.recorder.calls)
        await second.client.post(f"/runs/{run_id}/resume", json={"action": "approve"})
        after = await events_until(second.client, run_id, "done")
        follow_up = await second.client.post(
            "/solve",
            json={"task": "And C?", "max_paths": 1, "thread_id": thread_id},
            headers={"Accept": "application/json"},
        )
        planner_prompts = [c.prompt for c in second.models.recorder.by_role("planner")]
        thread = (await second.client.get(f"/threads/{thread_id}")).json()

    assert idle == []
    assert after[-1]["type"] == "done"
    assert follow_up.json()["status"] == "done"
    assert "Earlier question: What is B?" in planner_prompts[-1]
    assert [r["run_id"] for r in thread["runs"]] == [run_id, follow_up.json()["run_id"]]


async def test_the_mcp_solve_tool_refuses_plan_approval(service_for: ServiceMaker) -> None:
    async with service_for(TREE) as svc, mcp_session(svc.url) as session:
        result = await session.call_tool(
            "solve", {"task": "What is B?", "params": {"approve_plan": True}}
        )

    assert result.isError
    assert "start_run" in str(result.content)
    assert svc.models.recorder.calls == []
