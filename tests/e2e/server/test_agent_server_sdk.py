"""The official `langgraph-sdk` Python client against the server as a real process (its models
the real Gemini client against the simulator), pointed at the Agent Server API under `/lg`:
threads, streamed runs in several modes, state and history, a follow-up on the thread, a
plan approved through `__interrupt__` / `command.resume`, join, re-join, cancel, tenancy, and
a key's own assistant presetting its collection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import RunCreateMetadata, StreamPart

from testkit.gemini_roles import research_scenario
from testkit.process import ServerProcess
from tests.support.sim_env import sim_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.asyncio]
ASK = {"messages": [{"type": "human", "content": "What do the sources say?"}]}
FOLLOW_UP = {"messages": [{"role": "user", "content": "And how do they compare?"}]}
ONE_PATH = {"configurable": {"max_paths": 1}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with sim_server(
        research_scenario(),
        tmp_path_factory.mktemp("agent_server"),
        start_timeout_s=180,
        LATS_API_KEYS="one:k1,two:k2",
        LATS_SSE_HEARTBEAT_S="1",
        # Not a test of a key's rate: on a quiet machine this module's requests, one server
        # for all of them, come faster than the default 20 a second (burst 40).
        LATS_KEY_RPS="1000",
        LATS_KEY_BURST="1000",
    ) as process:
        yield process
    log = process.log()  # killed
    assert "Traceback" not in log, log[log.find("Traceback") - 500 :][:4000]


@pytest.fixture
async def client(server: ServerProcess) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=f"{server.url}/lg", api_key="k1")
    yield client
    await client.aclose()


async def _parts(stream: AsyncIterator[StreamPart]) -> list[StreamPart]:
    return [part async for part in stream]


def _of(parts: list[StreamPart], event: str) -> list[Any]:
    return [p.data for p in parts if p.event == event]


async def test_a_streamed_run_shows_values_updates_and_custom_events(
    client: LangGraphClient,
) -> None:
    thread = await client.threads.create()
    created: list[RunCreateMetadata] = []
    parts = await _parts(
        client.runs.stream(
            thread["thread_id"],
            "plantree-fast",
            input=ASK,
            config=ONE_PATH,
            stream_mode=["values", "updates", "custom", "messages-tuple"],
            on_run_created=created.append,
        )
    )

    assert set(thread) >= {"thread_id", "created_at", "updated_at", "metadata", "status", "values"}
    assert parts[0].event == "metadata"
    run_id = parts[0].data["run_id"]
    assert created == [{"run_id": run_id, "thread_id": thread["thread_id"]}]
    custom = [e["type"] for e in _of(parts, "custom")]
    assert custom[0] == "run_started"
    assert custom[-1] == "done"
    assert "plan" in custom
    assert "tool_call" in custom
    assert [next(iter(u)) for u in _of(parts, "updates")] == custom
    first, last = _of(parts, "values")[0], _of(parts, "values")[-1]
    assert [m["type"] for m in first["messages"]] == ["human"]
    assert [m["type"] for m in last["messages"]] == ["human", "ai"]
    assert last["messages"][0]["content"] == "What do the sources say?"
    assert last["messages"][-1]["content"].startswith(last["answer"])
    assert last["status"] == "done"
    assert last["run_id"] == run_id
    message, meta = _of(parts, "messages")[0]
    assert message["id"] == last["messages"][-1]["id"]
    assert meta["run_id"] == run_id
    assert parts[-1].event == "end"
    run = await client.runs.get(thread["thread_id"], run_id)
    assert (run["status"], run["kwargs"]["context"]["max_paths"]) == ("success", 1)
    assert run["kwargs"]["context"]["max_depth"] == 3  # plantree-fast's


async def test_state_history_and_a_follow_up_on_the_same_thread(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await _parts(client.runs.stream(tid, "plantree", input=ASK, config=ONE_PATH))
    parts = await _parts(
        client.runs.stream(tid, "plantree", input=FOLLOW_UP, context={"max_paths": 1})
    )
    state = await client.threads.get_state(tid)
    history = await client.threads.get_history(tid)
    found = await client.threads.search(limit=100)

    final = _of(parts, "values")[-1]
    assert [m["type"] for m in final["messages"]] == ["human", "ai", "human", "ai"]
    assert final["messages"][2]["content"] == "And how do they compare?"
    assert state["values"] == final
    assert state["next"] == []
    assert state["interrupts"] == []
    assert state["checkpoint"]["checkpoint_id"] == final["run_id"]
    assert [len(h["values"]["messages"]) for h in history] == [4, 2]
    assert history[0]["parent_checkpoint"] == history[1]["checkpoint"]
    assert tid in [t["thread_id"] for t in found]
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_a_plan_is_approved_through_interrupt_and_command_resume(
    client: LangGraphClient,
) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await _parts(
        client.runs.stream(
            tid,
            "plantree",
            input=ASK,
            context={"max_paths": 1, "approve_plan": True},
            stream_mode=["values", "updates"],
        )
    )
    waiting = await client.threads.get_state(tid)
    busy = await client.threads.get(tid)
    seen = await _parts(
        client.runs.join_stream(tid, first[0].data["run_id"], last_event_id=first[-1].id)
    )
    resumed = await _parts(
        client.runs.stream(
            tid, "plantree", command={"resume": {"action": "approve"}}, stream_mode="values"
        )
    )

    interrupt = _of(first, "updates")[-1]["__interrupt__"][0]
    assert interrupt["value"] == {"kind": "plan", "steps": ["Find sources", "Summarise them"]}
    assert _of(first, "values")[-1]["__interrupt__"] == [interrupt]
    assert first[-1].event == "end"
    assert waiting["next"] == ["approve"]
    assert waiting["interrupts"] == [interrupt]
    assert busy["status"] == "interrupted"
    assert [p.event for p in seen] == ["metadata", "end"]
    assert resumed[0].data["run_id"] == first[0].data["run_id"]
    assert _of(resumed, "values")[-1]["status"] == "done"
    assert resumed[-1].event == "end"


async def test_join_re_join_and_cancel(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "plantree-fast", input=ASK, config=ONE_PATH)
    joined = await client.runs.join(tid, run["run_id"])
    rejoined = await _parts(
        client.runs.join_stream(tid, run["run_id"], stream_mode="custom", last_event_id="1")
    )
    full = await _parts(client.runs.join_stream(tid, run["run_id"], stream_mode="custom"))

    waits = await client.threads.create()
    held = await client.runs.create(
        waits["thread_id"], "plantree", input=ASK, context={"approve_plan": True}
    )
    await client.runs.join(waits["thread_id"], held["run_id"])
    with pytest.raises(ConflictError):
        await client.runs.create(waits["thread_id"], "plantree", input=FOLLOW_UP)
    await client.runs.cancel(waits["thread_id"], held["run_id"], wait=True)
    cancelled = await client.runs.get(waits["thread_id"], held["run_id"])

    assert run["status"] == "pending"
    assert joined["status"] == "done"
    assert joined["messages"][-1]["type"] == "ai"
    assert next(e["type"] for e in _of(full, "custom")) == "run_started"
    assert _of(rejoined, "custom") == _of(full, "custom")[1:]
    assert cancelled["status"] == "interrupted"
    assert (await client.threads.get(waits["thread_id"]))["values"]["status"] == "cancelled"


async def test_another_key_gets_404_and_bad_requests_get_422(
    client: LangGraphClient, server: ServerProcess
) -> None:
    thread = await client.threads.create()
    other = get_client(url=f"{server.url}/lg", api_key="k2")
    try:
        with pytest.raises(NotFoundError):
            await other.threads.get(thread["thread_id"])
        with pytest.raises(NotFoundError):
            await other.threads.get_state(thread["thread_id"])
        assert thread["thread_id"] not in [t["thread_id"] for t in await other.threads.search()]
        assert await other.threads.search(ids=[thread["thread_id"]]) == []
    finally:
        await other.aclose()
    with pytest.raises(NotFoundError):
        await client.runs.create(thread["thread_id"], "no-such-assistant", input=ASK)
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread["thread_id"], "plantree", input=ASK, context={"x": 1})
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread["thread_id"], "plantree", input={"messages": []})
    with pytest.raises(ConflictError):  # nothing waits for an answer
        await client.runs.create(thread["thread_id"], "plantree", command={"resume": "approve"})
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(
            thread["thread_id"], "plantree", input=ASK, command={"resume": "approve"}
        )


async def test_wait_list_and_delete(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    answered = await client.runs.wait(tid, "plantree-fast", input=ASK, config=ONE_PATH)
    listed = await client.runs.list(tid)
    assert answered["status"] == "done"
    assert [r["run_id"] for r in listed] == [answered["run_id"]]
    assert await client.runs.list(tid, status="error") == []

    await client.runs.delete(tid, answered["run_id"])
    assert await client.runs.list(tid) == []
    await client.threads.delete(tid)
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_info_and_the_presets_as_assistants(client: LangGraphClient) -> None:
    info = await client.http.get("/info")
    found = await client.assistants.search()
    fast = await client.assistants.get("plantree-fast")

    assert info["flags"]["assistants"] is True
    assert [a["assistant_id"] for a in found][:2] == ["plantree", "plantree-fast"]
    assert fast["graph_id"] == "plantree"
    assert fast["context"]["max_paths"] == 2
    with pytest.raises(NotFoundError):
        await client.assistants.get("gpt")


async def test_an_assistant_presets_a_collection_for_its_runs(
    client: LangGraphClient, server: ServerProcess
) -> None:
    own_api = httpx.AsyncClient(base_url=server.url, headers={"x-api-key": "k1"}, timeout=60)
    other = get_client(url=f"{server.url}/lg", api_key="k2")
    try:
        collection = (await own_api.post("/collections", json={"name": "sdk notes"})).json()
        upload = await own_api.post(
            f"/collections/{collection['collection_id']}/documents",
            files={"file": ("notes.txt", b"Comets have tails of dust and gas.", "text/plain")},
        )
        assert upload.status_code == 201, upload.text
        preset = {"collections": [collection["collection_id"]], "max_paths": 1}
        made = await client.assistants.create(
            "plantree", context=preset, name="My notes", metadata={"team": "sdk"}
        )
        with pytest.raises(NotFoundError):
            await other.assistants.get(made["assistant_id"])
        found = await client.assistants.search(metadata={"team": "sdk"})
        renamed = await client.assistants.update(made["assistant_id"], name="Notes")
        thread = await client.threads.create()
        answered = await client.runs.wait(thread["thread_id"], made["assistant_id"], input=ASK)
        run = (await own_api.get(f"/runs/{answered['run_id']}")).json()
        await client.assistants.delete(made["assistant_id"])
    finally:
        await own_api.aclose()
        await other.aclose()

    assert made["context"] == preset == made["config"]["configurable"]
    assert [a["assistant_id"] for a in found] == [made["assistant_id"]]
    assert (renamed["name"], renamed["version"], renamed["context"]) == ("Notes", 2, preset)
    assert answered["status"] == "done"
    assert run["params"]["collections"] == [collection["collection_id"]]
    assert run["params"]["max_paths"] == 1
    with pytest.raises(NotFoundError):
        await client.assistants.get(made["assistant_id"])
    with pytest.raises(ConflictError):
        await client.assistants.delete("plantree")
