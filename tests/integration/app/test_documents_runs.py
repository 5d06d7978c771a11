"""A run over a tenant's collection through the service: the `documents` tool searches the
store's index as the run's tenant, and the answer's verified citation names the document's
title and page, its quote in that page's text; a collection of another key's is refused
before the run starts (real HTTP, scripted models, the real engine, store and verifier)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from app.http.sse import aframes
from testkit.pdfs import text_pdf
from tests.integration.test_grounded_answers import Citing, _answer
from tests.support.makers import ServiceMaker
from tests.support.mcp import mcp_session

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789"
KEYS = [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]
PAGES = [
    ["Annual report of the Example Company.", "Chapter one covers the people."],
    ["Revenue grew to 12 million euros in 2025.", "Costs stayed level."],
]
TASK = "What was the Example Company's revenue in 2025?"
SCENARIO = Citing(
    {"Find the revenue": _answer("12 million euros.[1]", (1, "E1", "Revenue grew to 12 million"))},
    plan=["Find the revenue"],
    tools={"Find the revenue": ("documents", {"query": "revenue 2025"})},
)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _report(svc: Any, key: str) -> tuple[str, str]:
    """A collection of `key`'s holding the two-page report, uploaded as a user does; its id and
    the document's."""
    made = await svc.client.post("/collections", json={"name": "reports"}, headers=_auth(key))
    collection_id: str = made.json()["collection_id"]
    files = {"file": ("report.pdf", text_pdf(PAGES, title="Annual report"), "application/pdf")}
    added = await svc.client.post(
        f"/collections/{collection_id}/documents", files=files, headers=_auth(key)
    )
    assert added.status_code == 201, added.text
    document_id: str = added.json()["documents"][0]["document_id"]
    return collection_id, document_id


async def _solve(svc: Any, key: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    async with svc.client.stream("POST", "/solve", json=body, headers=_auth(key)) as response:
        async for frame in aframes(response.aiter_lines()):
            events.append((frame.event, frame.json()))
    return events


async def test_a_run_over_a_collection_cites_the_document_by_title_and_page(
    service_for: ServiceMaker,
) -> None:
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, document_id = await _report(svc, ALICE)
        body = {"task": TASK, "max_paths": 1, "max_candidates": 1, "collections": [collection_id]}
        events = await _solve(svc, ALICE, body)
        run = (await svc.client.get(f"/runs/{events[0][1]['run_id']}", headers=_auth(ALICE))).json()

    kind, done = events[-1]
    assert kind == "done", done
    [citation] = done["citations"]
    assert citation["verified"] is True
    assert citation["source"]["title"] == "Annual report, p. 2"
    assert (
        citation["source"]["url"] == f"/collections/{collection_id}/documents/{document_id}#page=2"
    )
    assert citation["quote"] in " ".join(PAGES[1])
    assert done["groundedness"] == 1.0
    assert run["params"]["collections"] == [collection_id]
    # The executor was offered the documents tool and what it read came from page 2.
    [executor, *_] = svc.models.recorder.by_role("executor")
    assert "documents" in executor.tools
    calls = [e for k, e in events if k == "tool_call"]
    assert [(c["name"], c["args"], c["ok"]) for c in calls] == [
        ("documents", {"query": "revenue 2025"}, True)
    ]


async def test_another_keys_collection_is_not_found_and_no_run_is_made(
    service_for: ServiceMaker,
) -> None:
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, _ = await _report(svc, ALICE)
        body = {"task": TASK, "collections": [collection_id]}
        refused = await svc.client.post("/runs", json=body, headers=_auth(BOB))
        unknown = await svc.client.post(
            "/runs", json={**body, "collections": ["nope"]}, headers=_auth(ALICE)
        )
        bad = await svc.client.post(
            "/runs", json={**body, "collections": ["../etc"]}, headers=_auth(ALICE)
        )
        listed = (await svc.client.get("/runs", headers=_auth(BOB))).json()

    assert refused.status_code == 404
    assert refused.json()["code"] == "collection_not_found"
    assert unknown.status_code == 404
    assert bad.status_code == 422
    assert listed["runs"] == []
    assert svc.models.recorder.calls == []


async def test_the_openai_endpoint_takes_collections_and_annotates_a_file_citation(
    service_for: ServiceMaker,
) -> None:
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, document_id = await _report(svc, ALICE)
        body = {
            "model": "plantree",
            "messages": [{"role": "user", "content": TASK}],
            "collections": [collection_id],  # an extra body field, as run parameters are
            "max_paths": 1,
            "max_candidates": 1,
        }
        reply = await svc.client.post("/v1/chat/completions", json=body, headers=_auth(ALICE))

    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    [annotation] = message["annotations"]
    assert annotation == {
        "type": "file_citation",
        "file_id": document_id,
        "filename": "Annual report, p. 2",
        "index": message["content"].index("[1]"),
    }


async def test_the_agent_server_api_takes_collections_in_its_context(
    service_for: ServiceMaker,
) -> None:
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, _ = await _report(svc, ALICE)
        thread = (await svc.client.post("/lg/threads", json={}, headers=_auth(ALICE))).json()
        body = {
            "assistant_id": "plantree",
            "input": {"messages": [{"role": "user", "content": TASK}]},
            "context": {"collections": [collection_id], "max_paths": 1, "max_candidates": 1},
        }
        path = f"/lg/threads/{thread['thread_id']}/runs/wait"
        done = await svc.client.post(path, json=body, headers=_auth(ALICE))
        refused = await svc.client.post(path, json=body, headers=_auth(BOB))

    assert done.status_code == 200, done.text
    assert "Annual report, p. 2" in json.dumps(done.json())
    assert refused.status_code == 404  # bob's key finds neither alice's thread nor collection


async def test_the_mcp_solve_tool_takes_collections_in_its_params(
    service_for: ServiceMaker,
) -> None:
    params = {"max_paths": 1, "max_candidates": 1}
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, _ = await _report(svc, ALICE)
        async with mcp_session(svc.url, ALICE) as session:
            args = {"task": TASK, "params": {**params, "collections": [collection_id]}}
            done = await session.call_tool("solve", args)
        async with mcp_session(svc.url, BOB) as session:
            refused = await session.call_tool("solve", args)

    assert not done.isError, done.content
    assert "Annual report, p. 2" in json.dumps(done.structuredContent)
    assert refused.isError
    assert "no such collection" in json.dumps([c.model_dump() for c in refused.content])
