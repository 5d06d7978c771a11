"""A run over a tenant's collection through the service: the `documents` tool searches the
store's index as the run's tenant, and the answer's verified citation names the document's
title and page, its quote in that page's text (real HTTP, scripted models, the real engine,
store and verifier)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from httpx_sse import aconnect_sse
from pydantic import SecretStr

from app.settings import Settings
from app.store.collection_base import CollectionRecord, NewDocument
from app.store.sqlite.store import SqliteRunStore
from testkit.pdfs import text_pdf
from tests.integration.test_grounded_answers import Citing, _answer
from tests.support.makers import ServiceMaker
from tools.documents.passages import passages
from tools.documents.reading import read_document

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


async def _report(settings: Settings, tenant: str) -> tuple[str, str]:
    """A collection of `tenant` holding the two-page report, written through a store object of
    its own on the service's database; its id and the document's."""
    store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
    try:
        collection = CollectionRecord(
            id=uuid.uuid4().hex, tenant=tenant, name="reports", created_at=datetime.now(UTC)
        )
        await store.collections.create(collection)
        data = text_pdf(PAGES, title="Annual report")
        read = read_document("report.pdf", data)
        document = NewDocument(
            id=uuid.uuid4().hex,
            collection_id=collection.id,
            title=read.title,
            name="report.pdf",
            kind=read.kind,
            sha256=read.sha256,
            bytes=len(data),
            pages=len(read.pages),
            created_at=datetime.now(UTC),
            passages=passages(read),
        )
        await store.collections.add_document(tenant, document)
        return collection.id, document.id
    finally:
        await store.close()


async def _solve(svc: Any, key: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    async with aconnect_sse(svc.client, "POST", "/solve", json=body, headers=_auth(key)) as source:
        async for sse in source.aiter_sse():
            events.append((sse.event, json.loads(sse.data)))
    return events


async def test_a_run_over_a_collection_cites_the_document_by_title_and_page(
    service_for: ServiceMaker, settings: Settings
) -> None:
    async with service_for(SCENARIO, api_keys=KEYS) as svc:
        collection_id, document_id = await _report(settings, "alice")
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
