"""The Agent Server API's assistants over the real app (scripted models), on SQLite and on
Postgres: a key's own assistant made, read, changed, searched and deleted; a run started with it
takes its parameters, then the body's; another key's assistant is a 404 and stays as it was; bad
input is a 422 with the service's error body and stores nothing; the presets cannot change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"])
ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789"
KEYS = [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]
ASK = {"messages": [{"type": "human", "content": "What is A?"}]}
PRESETS = ["plantree", "plantree-fast"]


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None


@pytest.fixture
async def client(
    service_for: ServiceMaker, database_url: str | None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app served with Alice's and Bob's keys on the test's database."""
    async with service_for(TREE, api_keys=KEYS, database_url=database_url) as svc:
        yield svc.client


@pytest.fixture
async def collection(client: httpx.AsyncClient) -> str:
    """The id of Alice's collection "notes", one document in it."""
    made = await client.post("/collections", json={"name": "notes"}, headers=_as(ALICE))
    collection_id: str = made.json()["collection_id"]
    added = await client.post(
        f"/collections/{collection_id}/documents",
        json={"title": "Notes", "text": "Comets have tails."},
        headers=_as(ALICE),
    )
    assert added.status_code == 201, added.text
    return collection_id


async def _create(client: httpx.AsyncClient, key: str = ALICE, **body: Any) -> httpx.Response:
    return await client.post(
        "/lg/assistants", json={"graph_id": "plantree", **body}, headers=_as(key)
    )


async def _ids(client: httpx.AsyncClient, key: str = ALICE, **body: Any) -> list[str]:
    found = await client.post("/lg/assistants/search", json=body, headers=_as(key))
    assert found.status_code == 200, found.text
    return [a["assistant_id"] for a in found.json()]


async def test_an_assistant_is_made_read_changed_searched_and_deleted(
    client: httpx.AsyncClient, collection: str
) -> None:
    made = await _create(
        client,
        assistant_id="research",
        name="Research",
        config={"configurable": {"max_paths": 2, "collections": [collection]}},
        context={"max_paths": 3, "max_depth": 4},
        metadata={"team": "a"},
    )
    other = await _create(client, name="Other", metadata={"team": "b"})
    read = await client.get("/lg/assistants/research", headers=_as(ALICE))
    renamed = await client.patch(
        "/lg/assistants/research",
        json={"name": "Renamed", "metadata": {"extra": 1}},
        headers=_as(ALICE),
    )
    reset = await client.patch(
        "/lg/assistants/research", json={"context": {"max_paths": 1}}, headers=_as(ALICE)
    )
    listed = await _ids(client)
    team_a = await _ids(client, metadata={"team": "a"})
    named = await _ids(client, name="renam")
    other_graph = await _ids(client, graph_id="agent")
    paged = await client.post(
        "/lg/assistants/search", json={"limit": 2, "offset": 1}, headers=_as(ALICE)
    )
    gone = await client.delete("/lg/assistants/research", headers=_as(ALICE))
    missing = await client.get("/lg/assistants/research", headers=_as(ALICE))
    twice = await client.delete("/lg/assistants/research", headers=_as(ALICE))

    assert made.status_code == 200, made.text
    shown = made.json()
    params = {"max_paths": 3, "max_depth": 4, "collections": [collection]}
    assert shown["context"] == params == shown["config"]["configurable"]
    assert (shown["graph_id"], shown["name"], shown["version"]) == ("plantree", "Research", 1)
    assert shown["metadata"] == {"team": "a"}
    assert read.json() == shown
    assert other.json()["assistant_id"] not in ("", None)
    assert renamed.json()["name"] == "Renamed"
    assert renamed.json()["metadata"] == {"team": "a", "extra": 1}
    assert renamed.json()["context"] == params
    assert reset.json()["context"] == {"max_paths": 1}
    assert (reset.json()["name"], reset.json()["version"]) == ("Renamed", 3)
    assert listed == [*PRESETS, other.json()["assistant_id"], "research"]  # newest first
    assert team_a == ["research"]
    assert named == ["research"]
    assert other_graph == []
    assert [a["assistant_id"] for a in paged.json()] == listed[1:3]
    assert paged.headers["X-Pagination-Next"] == "3"
    assert gone.status_code == 204
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    assert twice.status_code == 404


async def test_a_run_from_an_assistant_takes_its_parameters_then_the_bodys(
    client: httpx.AsyncClient, collection: str
) -> None:
    preset = {"max_paths": 2, "max_depth": 3, "collections": [collection]}
    await _create(client, assistant_id="docs", context=preset)
    thread = (await client.post("/lg/threads", json={}, headers=_as(ALICE))).json()
    runs = f"/lg/threads/{thread['thread_id']}/runs"
    body = {"assistant_id": "docs", "input": ASK, "config": {"configurable": {"max_paths": 1}}}
    waited = await client.post(f"{runs}/wait", json=body, headers=_as(ALICE), timeout=30)
    run = await client.get(f"/runs/{waited.json()['run_id']}", headers=_as(ALICE))
    deleted = await client.delete(f"/collections/{collection}", headers=_as(ALICE))
    kept = await client.get("/lg/assistants/docs", headers=_as(ALICE))
    refused = await client.post(runs, json=body, headers=_as(ALICE))
    listed = await client.get(runs, headers=_as(ALICE))

    assert waited.status_code == 200, waited.text
    params = run.json()["params"]
    assert (params["max_paths"], params["max_depth"]) == (1, 3)
    assert params["collections"] == [collection]
    assert deleted.status_code == 204  # an assistant naming it does not keep a collection
    assert kept.json()["context"]["collections"] == [collection]
    assert (refused.status_code, refused.json()["code"]) == (404, "collection_not_found")
    assert len(listed.json()) == 1  # nothing was stored for the refused run


async def test_another_keys_assistant_is_404_and_stays_as_it_was(
    client: httpx.AsyncClient, collection: str
) -> None:
    await _create(client, assistant_id="mine", context={"collections": [collection]})
    before = await client.get("/lg/assistants/mine", headers=_as(ALICE))
    bobs_thread = (await client.post("/lg/threads", json={}, headers=_as(BOB))).json()
    answers = [
        await client.get("/lg/assistants/mine", headers=_as(BOB)),
        await client.patch("/lg/assistants/mine", json={"name": "x"}, headers=_as(BOB)),
        await client.delete("/lg/assistants/mine", headers=_as(BOB)),
        await client.post(
            f"/lg/threads/{bobs_thread['thread_id']}/runs",
            json={"assistant_id": "mine", "input": ASK},
            headers=_as(BOB),
        ),
        await _create(client, BOB, assistant_id="bobs", context={"collections": [collection]}),
    ]
    bob_sees = await _ids(client, BOB)
    bobs_own = await _create(client, BOB, assistant_id="mine", name="Bob's")
    after = await client.get("/lg/assistants/mine", headers=_as(ALICE))

    assert [a.status_code for a in answers] == [404] * 5
    assert [a.json()["code"] for a in answers][-1] == "collection_not_found"
    assert bob_sees == PRESETS
    assert (bobs_own.status_code, bobs_own.json()["name"]) == (200, "Bob's")  # his own id
    assert after.json() == before.json()


async def test_bad_assistants_are_422_and_store_nothing(client: httpx.AsyncClient) -> None:
    await _create(client, assistant_id="kept", context={"max_paths": 2})
    bodies: list[dict[str, Any]] = [
        {"graph_id": "agent"},
        {"graph_id": None},
        {"graph_id": "plantree", "context": {"max_paths": 10_000}},
        {"graph_id": "plantree", "context": {"no_such_knob": 1}},
        {"graph_id": "plantree", "config": {"configurable": {"max_depth": "deep"}}},
        {"graph_id": "plantree", "webhook": "https://example.org"},
        {"graph_id": "plantree", "assistant_id": "has space"},
        {"graph_id": "plantree", "name": ""},
        {"graph_id": "plantree", "name": "nul\x00"},
        {"graph_id": "plantree", "metadata": {"k": "nul\x00"}},
        {"graph_id": "plantree", "metadata": {"k": "x" * 20_000}},
        {"graph_id": "plantree", "if_exists": "replace"},
        {"graph_id": "plantree", "context": {"model": "openai:gpt-4o"}},
    ]
    created = [
        await client.post("/lg/assistants", json=body, headers=_as(ALICE)) for body in bodies
    ]
    patched = [
        await client.patch("/lg/assistants/kept", json=body, headers=_as(ALICE))
        for body in (
            {"context": {"max_paths": 0}},
            {"graph_id": "agent"},
            {"metadata": {"k": "nul\x00"}},
            {"version": 7},
        )
    ]
    raw = [  # what json= cannot send: a lone surrogate, NaN
        await client.post(
            "/lg/assistants",
            content='{"graph_id": "plantree", "metadata": {"k": ' + value + "}}",
            headers={**_as(ALICE), "Content-Type": "application/json"},
        )
        for value in ('"\\ud800"', "NaN")
    ]
    searched = await client.post(
        "/lg/assistants/search", json={"sort_by": "name"}, headers=_as(ALICE)
    )
    bad_id = await client.get("/lg/assistants/has space", headers=_as(ALICE))
    left = await _ids(client)
    kept = await client.get("/lg/assistants/kept", headers=_as(ALICE))

    for answer in [*created, *patched, *raw, searched, bad_id]:
        assert answer.status_code == 422, answer.text
        assert answer.json()["code"]
        assert answer.json()["message"]
    assert created[2].json()["fields"][0]["loc"] == ["body", "context", "max_paths"]
    assert created[-1].json()["code"] == "option_refused"
    assert left == [*PRESETS, "kept"]
    assert (kept.json()["context"], kept.json()["version"]) == ({"max_paths": 2}, 1)


async def test_the_presets_cannot_change_and_an_id_is_taken_once(client: httpx.AsyncClient) -> None:
    refused = [
        await client.patch("/lg/assistants/plantree", json={"name": "x"}, headers=_as(ALICE)),
        await client.delete("/lg/assistants/plantree-fast", headers=_as(ALICE)),
        await _create(client, assistant_id="plantree"),
    ]
    preset = await _create(client, assistant_id="plantree-fast", if_exists="do_nothing")
    first = await _create(client, assistant_id="mine", context={"max_paths": 2})
    again = await _create(client, assistant_id="mine", context={"max_paths": 3})
    kept = await _create(
        client, assistant_id="mine", context={"max_paths": 3}, if_exists="do_nothing"
    )
    fast = await client.get("/lg/assistants/plantree-fast", headers=_as(ALICE))

    assert [(r.status_code, r.json()["code"]) for r in refused] == [
        (409, "assistant_is_preset")
    ] * 3
    assert preset.json() == fast.json()
    assert fast.json()["context"]["max_paths"] == 2
    assert first.status_code == 200
    assert (again.status_code, again.json()["code"]) == (409, "assistant_exists")
    assert kept.json() == first.json()
