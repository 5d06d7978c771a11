"""Runs belong to the key that started them: another key gets 404 on every route that names
the run (HTTP, OpenAI-compatible, MCP) and does not see it listed; the admin key sees all."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import openai
import psycopg
from mcp.shared.exceptions import McpError
from pydantic import AnyUrl, SecretStr

from app.http.sse import frames
from app.settings import Settings
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.mcp import mcp_session

TREE = Scenario(plan=["A"], replans={"A": ["B"]})
BODY = {"task": "t", "max_paths": 1}
ALICE, BOB, ADMIN = "alice-secret-4d1c", "bob-secret-77e0", "admin-secret-c2a9"
KEYS = {"api_keys": [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]}
KEYED = {**KEYS, "admin_key": SecretStr(ADMIN)}


def as_(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def finished_run(client: httpx.AsyncClient, key: str) -> str:
    """A run started by `key`, followed to its end."""
    run_id: str = (await client.post("/runs", json=BODY, headers=as_(key))).json()["run_id"]
    events = await client.get(f"/runs/{run_id}/events", headers=as_(key))
    assert [f.event for f in frames(events.text.splitlines())][-1] == "done"
    return run_id


async def reach(client: httpx.AsyncClient, key: str, run_id: str) -> dict[str, Any]:
    """Every run route, as `key`: its status codes and whether the run is listed."""
    listed = (await client.get("/runs", headers=as_(key))).json()["runs"]
    return {
        "get": (await client.get(f"/runs/{run_id}", headers=as_(key))).status_code,
        "events": (await client.get(f"/runs/{run_id}/events", headers=as_(key))).status_code,
        "trace": (await client.get(f"/runs/{run_id}/trace", headers=as_(key))).status_code,
        "cancel": (await client.post(f"/runs/{run_id}/cancel", headers=as_(key))).status_code,
        "listed": run_id in [r["run_id"] for r in listed],
    }


async def test_another_key_gets_404_everywhere_and_the_admin_sees_all(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, **KEYED) as svc:
        run_id = await finished_run(svc.client, ALICE)
        by_bob = await reach(svc.client, BOB, run_id)
        by_admin = await reach(svc.client, ADMIN, run_id)
        by_alice = await reach(svc.client, ALICE, run_id)
        refused = await svc.client.get(f"/runs/{run_id}", headers=as_(BOB))
        missing = await svc.client.get("/runs/no-such-run", headers=as_(BOB))

    ok = {"get": 200, "events": 200, "trace": 200, "cancel": 200, "listed": True}
    assert by_bob == {"get": 404, "events": 404, "trace": 404, "cancel": 404, "listed": False}
    assert by_admin == ok
    assert by_alice == ok
    assert refused.json() == {"code": "not_found", "message": f"no run {run_id}"}
    assert missing.json()["code"] == "not_found"


async def test_the_store_keeps_the_key_name_never_the_key(
    service_for: ServiceMaker, settings: Settings
) -> None:
    keys = [SecretStr(f"alice:{ALICE}"), SecretStr(BOB)]  # Bob's key is bare: named key2
    async with service_for(TREE, api_keys=keys, admin_key=SecretStr(ADMIN)) as svc:
        for key in (ALICE, BOB, ADMIN):
            await finished_run(svc.client, key)

    db = sqlite3.connect(Path(settings.data_dir) / "runs.sqlite")
    tenants = sorted(row[0] for row in db.execute("SELECT tenant FROM runs"))
    dump = "\n".join(db.iterdump())
    db.close()
    assert tenants == ["admin", "alice", "key2"]
    for secret in (ALICE, BOB, ADMIN):
        assert secret not in dump


async def test_without_keys_there_is_one_user_whose_runs_belong_to_nobody(
    service_for: ServiceMaker, settings: Settings
) -> None:
    async with service_for(TREE) as svc:
        run_id = (await svc.client.post("/runs", json=BODY)).json()["run_id"]
        listed = (await svc.client.get("/runs")).json()["runs"]

    db = sqlite3.connect(Path(settings.data_dir) / "runs.sqlite")
    tenants = [row[0] for row in db.execute("SELECT tenant FROM runs")]
    db.close()
    assert [r["run_id"] for r in listed] == [run_id]
    assert tenants == [None]


async def test_a_chat_completion_run_belongs_to_its_key(service_for: ServiceMaker) -> None:
    async with service_for(TREE, **KEYED) as svc:
        client = openai.AsyncOpenAI(
            base_url=f"{svc.url}/v1", api_key=ALICE, max_retries=0, timeout=20
        )
        completion = await client.chat.completions.create(
            model="plantree", messages=[{"role": "user", "content": "What is B?"}]
        )
        run_id = completion.id
        by_bob = await reach(svc.client, BOB, run_id)
        by_alice = (await svc.client.get(f"/runs/{run_id}", headers=as_(ALICE))).status_code

    assert by_bob == {"get": 404, "events": 404, "trace": 404, "cancel": 404, "listed": False}
    assert by_alice == 200


async def test_over_mcp_another_key_cannot_read_list_or_cancel_a_run(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, **KEYED) as svc:
        async with mcp_session(svc.url, ALICE) as alice:
            done = (await alice.call_tool("solve", {"task": "What is B?"})).structuredContent
        run_id = done["run_id"] if done else ""
        async with mcp_session(svc.url, BOB) as bob:
            read = await bob.call_tool("get_run", {"run_id": run_id})
            cancel = await bob.call_tool("cancel_run", {"run_id": run_id})
            listed = (await bob.call_tool("list_runs", {})).structuredContent
            try:
                await bob.read_resource(AnyUrl(f"plantree://runs/{run_id}"))
                resource_refused = False
            except McpError:
                resource_refused = True
        async with mcp_session(svc.url, ADMIN) as admin:
            seen = (await admin.call_tool("get_run", {"run_id": run_id})).structuredContent
            every = (await admin.call_tool("list_runs", {})).structuredContent
        by_http = (await svc.client.get(f"/runs/{run_id}", headers=as_(BOB))).status_code

    assert read.isError
    assert cancel.isError
    assert f"no run {run_id}" in str(read.content)
    assert listed == {"runs": [], "next_offset": None}
    assert resource_refused
    assert seen is not None
    assert seen["status"] == "done"
    assert every is not None
    assert [r["run_id"] for r in every["runs"]] == [run_id]
    assert by_http == 404


async def test_on_postgres_a_key_reaches_only_its_own_runs(
    service_for: ServiceMaker, postgres_url: str
) -> None:
    async with service_for(TREE, database_url=postgres_url, **KEYED) as svc:
        run_id = await finished_run(svc.client, ALICE)
        by_bob = await reach(svc.client, BOB, run_id)
        by_admin = await reach(svc.client, ADMIN, run_id)

    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT * FROM lats_runs WHERE id = %s", (run_id,)).fetchone()
    assert row is not None
    assert "alice" in row
    assert not any(ALICE in str(value) for value in row)
    assert by_bob == {"get": 404, "events": 404, "trace": 404, "cancel": 404, "listed": False}
    assert by_admin == {"get": 200, "events": 200, "trace": 200, "cancel": 200, "listed": True}
