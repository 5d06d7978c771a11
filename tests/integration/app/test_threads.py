"""Threads: a follow-up asked on a thread starts from what the earlier run found (fewer tool
calls than the same question asked cold, and an answer citing the earlier run's evidence);
threads list, delete and belong to their key like runs (the real app, its SQLite store,
scripted models that read their prompts)."""

from __future__ import annotations

import re
from typing import Any

import httpx
from langchain_core.messages import AIMessage
from pydantic import SecretStr

from testkit.fakes import FakeCall, Reply, last_done_step, step_to_execute, tool_call
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.page_search import PageSearch, wiki_page

PAGES = {
    "capital": wiki_page(
        "France", "Paris is the capital and largest city of France. It lies on the Seine."
    ),
    "river": wiki_page(
        "Seine",
        "The Seine is a 777-kilometre-long river in northern France that flows through Paris.",
    ),
}
CAPITAL_URL = PAGES["capital"].url
QUOTES = {"capital": "Paris is the capital and largest city", "river": "flows through Paris"}
STEP_NEEDS = {"Find the capital": "capital", "Find the river": "river"}
FIRST = "What is the capital of France?"
FOLLOW_UP = "Which river flows through the capital of France?"
KNOWN_BLOCK = "Already known from earlier questions on this thread"
_ITEM = re.compile(r"^\[(E\d+)\] ", re.MULTILINE)
_TASK = re.compile(r"^Task: (.*)$", re.MULTILINE)


def evidence_id(prompt: str, quote: str) -> str | None:
    """The id of the evidence item in `prompt` whose text holds `quote`."""
    starts = list(_ITEM.finditer(prompt))
    for match, after in zip(starts, [*starts[1:], None], strict=True):
        block = prompt[match.start() : after.start() if after else len(prompt)]
        if quote in block:
            return match.group(1)
    return None


class Reader(Scenario):
    """Models that read their prompts: the planner plans only what is not known yet, the
    executor searches only for what its evidence lacks, the responder cites every item that
    holds a fact the task needs."""

    def reply(self, call: FakeCall) -> Reply:
        if call.role == "planner":
            prompt = call.prompt
            if "river" not in prompt:
                return {"steps": ["Find the capital"]}
            if KNOWN_BLOCK in prompt and QUOTES["capital"] in prompt:
                return {"steps": ["Find the river"]}
            return {"steps": ["Find the capital", "Find the river"]}
        if call.role == "executor":
            need = STEP_NEEDS[step_to_execute(call)]
            shown = QUOTES[need] in call.prompt or any(m.type == "tool" for m in call.messages)
            return (
                AIMessage(content=f"found the {need}")
                if shown
                else tool_call("search", {"query": need})
            )
        if call.role == "responder":
            citations = [
                {"marker": n, "evidence_id": eid, "quote": quote}
                for n, quote in enumerate(QUOTES.values(), start=1)
                if (eid := evidence_id(call.prompt, quote)) is not None
            ]
            text = " ".join(f"Fact {c['marker']}.[{c['marker']}]" for c in citations)
            return {"answer": text or "Unknown.", "citations": citations}
        if call.role == "replanner":
            asks_river = "river" in _TASK.findall(call.prompt)[0]
            after = last_done_step(call)
            return self.replan(after if asks_river else "")
        return super().reply(call)


def reader() -> Reader:
    return Reader(plan=[], replans={"Find the capital": ["Find the river"]})


async def ask(client: httpx.AsyncClient, task: str, **extra: Any) -> dict[str, Any]:
    """A run of `task`, waited for; the finished run."""
    response = await client.post(
        "/solve", json={"task": task, **extra}, headers={"Accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    run: dict[str, Any] = response.json()
    assert run["status"] == "done", run
    return run


async def test_a_follow_up_on_a_thread_searches_less_and_cites_the_earlier_evidence(
    service_for: ServiceMaker,
) -> None:
    cold_search, thread_search = PageSearch(PAGES), PageSearch(PAGES)
    async with service_for(reader(), tools=[cold_search.tool()]) as svc:
        await ask(svc.client, FOLLOW_UP)
    async with service_for(reader(), tools=[thread_search.tool()]) as svc:
        thread = (await svc.client.post("/threads")).json()
        first = await ask(svc.client, FIRST, thread_id=thread["thread_id"])
        asked_first = list(thread_search.queries)
        follow_up = await ask(svc.client, FOLLOW_UP, thread_id=thread["thread_id"])
        listed = (await svc.client.get(f"/threads/{thread['thread_id']}")).json()

    assert asked_first == ["capital"]
    assert cold_search.queries == ["capital", "river"]
    follow_up_queries = thread_search.queries[len(asked_first) :]
    assert follow_up_queries == ["river"]
    assert len(follow_up_queries) < len(cold_search.queries)
    assert follow_up["metrics"]["tool_calls"] < 2
    cited = {c["source"]["url"] for c in follow_up["citations"]}
    assert CAPITAL_URL in cited  # found by the first run, not searched again
    assert any(c["source"]["url"] == CAPITAL_URL for c in first["citations"])
    assert [r["run_id"] for r in listed["runs"]] == [first["run_id"], follow_up["run_id"]]
    assert [r["task"] for r in listed["runs"]] == [FIRST, FOLLOW_UP]


async def test_deleting_a_thread_deletes_its_runs(service_for: ServiceMaker) -> None:
    searches = PageSearch(PAGES)
    async with service_for(reader(), tools=[searches.tool()]) as svc:
        thread_id = (await svc.client.post("/threads")).json()["thread_id"]
        run = await ask(svc.client, FIRST, thread_id=thread_id)
        deleted = await svc.client.delete(f"/threads/{thread_id}")
        thread_after = await svc.client.get(f"/threads/{thread_id}")
        run_after = await svc.client.get(f"/runs/{run['run_id']}")

    assert deleted.status_code == 204
    assert thread_after.status_code == 404
    assert run_after.status_code == 404


ALICE, BOB = "alice-secret-4d1c", "bob-secret-77e0"
KEYS = {"api_keys": [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]}


def as_(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_another_key_gets_404_for_a_thread_and_cannot_ask_on_it(
    service_for: ServiceMaker,
) -> None:
    async with service_for(reader(), tools=[PageSearch(PAGES).tool()], **KEYS) as svc:
        made = await svc.client.post("/threads", headers=as_(ALICE))
        thread_id = made.json()["thread_id"]
        by_bob = {
            "get": await svc.client.get(f"/threads/{thread_id}", headers=as_(BOB)),
            "delete": await svc.client.delete(f"/threads/{thread_id}", headers=as_(BOB)),
            "solve": await svc.client.post(
                "/runs", json={"task": FIRST, "thread_id": thread_id}, headers=as_(BOB)
            ),
        }
        by_alice = await svc.client.get(f"/threads/{thread_id}", headers=as_(ALICE))

    assert made.status_code == 201
    assert made.headers["location"] == f"/threads/{thread_id}"
    assert {name: r.status_code for name, r in by_bob.items()} == {
        "get": 404,
        "delete": 404,
        "solve": 404,
    }
    assert by_bob["get"].json()["code"] == "not_found"
    assert by_alice.status_code == 200


async def test_a_malformed_thread_id_is_a_422_not_a_500(service_for: ServiceMaker) -> None:
    async with service_for(reader(), tools=[PageSearch(PAGES).tool()]) as svc:
        body = await svc.client.post("/runs", json={"task": FIRST, "thread_id": "no/such id"})
        path = await svc.client.get("/threads/" + "x" * 65)
        missing = await svc.client.post("/runs", json={"task": FIRST, "thread_id": "abc"})

    assert body.status_code == 422
    assert body.json()["code"] == "invalid_request"
    assert path.status_code == 422
    assert missing.status_code == 404
