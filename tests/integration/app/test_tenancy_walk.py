"""Tenancy over the whole API: every route of the OpenAPI document that names a run, a thread,
a collection, a document, a page or an Agent Server assistant, called with another key's ids,
answers 404, and nothing of the owner's changed (real HTTP, scripted models, the real store)."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import SecretStr

from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789"
KEYS = [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]
TREE = Scenario(plan=["A"])
TENANT_PARAMS = {"run_id", "thread_id", "collection_id", "document_id", "page", "assistant_id"}
MESSAGE = {"messages": [{"role": "user", "content": "What is A?"}]}
# A body each route would take from its owner, so that a refusal is the key's, not the body's.
BODIES = {
    ("post", "/runs/{run_id}/resume"): {"action": "approve"},
    ("post", "/runs/{run_id}/commands"): {"command": "prune", "node_id": "n1"},
    ("post", "/collections/{collection_id}/documents"): {"title": "t", "text": "Some text."},
    ("post", "/lg/threads/{thread_id}/history"): {},
    ("patch", "/lg/assistants/{assistant_id}"): {"name": "renamed"},
    ("post", "/lg/threads/{thread_id}/runs"): {"assistant_id": "plantree", "input": MESSAGE},
    ("post", "/lg/threads/{thread_id}/runs/wait"): {"assistant_id": "plantree", "input": MESSAGE},
    ("post", "/lg/threads/{thread_id}/runs/stream"): {"assistant_id": "plantree", "input": MESSAGE},
}


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _alices(client: httpx.AsyncClient) -> dict[str, dict[str, str]]:
    """Alice's things, by the API they belong to: a finished run on a thread, an Agent Server
    thread with a run, a collection with a document, an assistant presetting it."""
    thread = (await client.post("/threads", headers=_as(ALICE))).json()["thread_id"]
    body = {"task": "What is A?", "thread_id": thread}
    run = await client.post(
        "/solve", json=body, headers={**_as(ALICE), "Accept": "application/json"}
    )
    lg_thread = (await client.post("/lg/threads", json={}, headers=_as(ALICE))).json()
    lg_run = await client.post(
        f"/lg/threads/{lg_thread['thread_id']}/runs",
        json={"assistant_id": "plantree", "input": MESSAGE},
        headers=_as(ALICE),
    )
    made = await client.post("/collections", json={"name": "notes"}, headers=_as(ALICE))
    collection = made.json()["collection_id"]
    added = await client.post(
        f"/collections/{collection}/documents",
        json={"title": "Notes", "text": "Comets have tails."},
        headers=_as(ALICE),
    )
    document = added.json()["documents"][0]["document_id"]
    made_assistant = await client.post(
        "/lg/assistants",
        json={"graph_id": "plantree", "context": {"collections": [collection]}},
        headers=_as(ALICE),
    )
    common = {"collection_id": collection, "document_id": document, "page": "1"}
    return {
        "": {**common, "run_id": run.json()["run_id"], "thread_id": thread},
        "/lg": {
            **common,
            "run_id": lg_run.json()["run_id"],
            "thread_id": lg_thread["thread_id"],
            "assistant_id": made_assistant.json()["assistant_id"],
        },
    }


async def _snapshot(client: httpx.AsyncClient, ids: dict[str, dict[str, str]]) -> list[Any]:
    """What alice sees of her things."""
    plain, lg = ids[""], ids["/lg"]
    paths = [
        f"/runs/{plain['run_id']}",
        f"/threads/{plain['thread_id']}",
        f"/lg/threads/{lg['thread_id']}",
        f"/lg/assistants/{lg['assistant_id']}",
        f"/collections/{plain['collection_id']}",
        f"/collections/{plain['collection_id']}/documents/{plain['document_id']}/pages/1",
    ]
    seen = []
    for path in paths:
        answer = await client.get(path, headers=_as(ALICE))
        body = answer.json()
        for moving in ("updated_at", "created_at", "ts", "metadata"):
            if isinstance(body, dict):
                body.pop(moving, None)
        shown = path.startswith(("/col", "/lg/assistants"))
        seen.append((path, answer.status_code, body if shown else None))
    return seen


async def test_every_route_with_an_id_is_404_to_another_key_and_changes_nothing(
    service_for: ServiceMaker,
) -> None:
    async with service_for(TREE, api_keys=KEYS) as svc:
        spec = (await svc.client.get("/openapi.json")).json()
        ids = await _alices(svc.client)
        before = await _snapshot(svc.client, ids)
        answers: dict[str, int] = {}
        walked = 0
        for template, operations in spec["paths"].items():
            names = {part[1:-1] for part in template.split("/") if part.startswith("{")}
            if not names or not names <= TENANT_PARAMS:
                continue  # no id, or only ids of no one (a model)
            mine = ids["/lg" if template.startswith("/lg/") else ""]
            path = template.format(**{name: mine[name] for name in names})
            for method in operations:
                body = BODIES.get((method, template))
                answer = await svc.client.request(
                    method.upper(), path, json=body, headers=_as(BOB), timeout=30
                )
                answers[f"{method.upper()} {template}"] = answer.status_code
                walked += 1
        after = await _snapshot(svc.client, ids)

    assert walked >= 28  # every run, thread, collection and Agent Server route named above
    assert {route: code for route, code in answers.items() if code != 404} == {}
    assert after == before
    assert all(code == 200 for _, code, _ in before)
