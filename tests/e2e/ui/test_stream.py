"""How the page reads event streams: with an API key (asked once, sent as a header, never in a
URL), and re-joining a dropped stream after the last event id."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.async_api import Page, Request, Route, expect
from pydantic import SecretStr

from testkit.gate import Gate
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, node, node_ids
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS

TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})
KEY = "s3cret-key-for-the-page"
EVENTS_URL = re.compile(r"/runs/\w+/events")


async def enter_key(page: Page, key: str) -> None:
    await expect(page.locator("#key-dialog")).to_be_visible()
    await page.fill("#key-input", key)
    await page.press("#key-input", "Enter")


async def test_with_api_keys_the_page_asks_until_a_key_works_then_sends_it_as_a_header(
    page: Page, service_for: ServiceMaker
) -> None:
    gate = Gate(TREE, "B")
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request))
    async with service_for(gate, api_keys=[SecretStr(KEY)]) as svc:
        await page.goto(svc.url)
        await enter_key(page, "a-wrong-key")
        await expect(page.locator("#key-reason")).to_contain_text("refused")
        await enter_key(page, KEY)
        await expect(page.locator("#key-dialog")).to_be_hidden()
        await expect(page.locator("body")).to_have_attribute("data-ready", "true")
        await page.fill("#task", "Keyed run")
        await page.click("#start")
        await expect(node(page, "B")).to_have_attribute("data-status", "running")

        await page.reload()  # the key outlives a reload of the tab: no second question
        await expect(page.locator("body")).to_have_attribute("data-ready", "true")
        await expect(node(page, "B")).to_have_attribute("data-status", "running")
        asked_again = await page.locator("#key-dialog").is_visible()
        gate.release.set()
        await expect(page.locator("#run-status")).to_have_text("done")

    api_calls = [r for r in requests if r.resource_type in {"fetch", "eventsource"}]
    api_calls = [r for r in api_calls if "/runs" in r.url]
    auth = [(await r.all_headers()).get("authorization") for r in api_calls]
    streams = [r for r in api_calls if EVENTS_URL.search(r.url)]
    assert not asked_again
    assert auth[0] is None  # the first call, refused, asked for the key
    assert auth.count("Bearer a-wrong-key") == 1
    assert all(a == f"Bearer {KEY}" for a in auth[2:])
    assert len(streams) == 2  # one per page load
    assert {r.resource_type for r in streams} == {"fetch"}  # EventSource cannot send the key
    assert not [r.url for r in requests if KEY in r.url]


@pytest.mark.parametrize("keyed", [False, True], ids=["eventsource", "fetch-reader"])
async def test_a_dropped_stream_rejoins_after_the_last_event_id(
    page: Page, service_for: ServiceMaker, keyed: bool
) -> None:
    overrides: dict[str, Any] = {"api_keys": [SecretStr(KEY)]} if keyed else {}
    async with service_for(TREE, **overrides) as svc:
        headers = {"Accept": "application/json", "X-API-Key": KEY}
        run = (
            await svc.client.post("/solve", json={"task": "t", "strategy": "mcts"}, headers=headers)
        ).json()
        trace = (await svc.client.get(f"/runs/{run['run_id']}/trace", headers=headers)).text
        first = [json.loads(line) for line in trace.splitlines()][:3]
        # The first connection delivers three events, then drops (no terminal event).
        cut = "retry: 50\n\n" + "".join(
            f"id: {e['id']}\nevent: {e['event']['type']}\ndata: {json.dumps(e['event'])}\n\n"
            for e in first
        )
        streams: list[Request] = []

        async def drop_the_first(route: Route) -> None:
            streams.append(route.request)
            if len(streams) == 1:
                await route.fulfill(body=cut, headers={"Content-Type": "text/event-stream"})
            else:
                await route.continue_()

        await page.route(EVENTS_URL, drop_the_first)
        await page.add_init_script(SPY)
        await page.goto(svc.url)
        if keyed:
            await enter_key(page, KEY)
        await page.locator(".run-item").first.click()
        await expect(page.locator("#run-status")).to_have_text("done")
        drawn = await node_ids(page, ".node")
        paths = await page.locator("#cost-paths").inner_text()
        received = await page.evaluate("window.receivedIds")
        sent = await streams[1].all_headers()

    assert len(streams) == 2
    assert {r.resource_type for r in streams} == ({"fetch"} if keyed else {"eventsource"})
    if keyed:
        assert sent["last-event-id"] == "3"
    else:
        # Chromium adds EventSource's Last-Event-ID below the layer Playwright shows; what
        # the server sent back tells instead: nothing before id 4 came a second time.
        assert received == [str(i) for i in range(1, len(received) + 1)]
    assert drawn == [n["id"] for n in run["nodes"]]
    assert paths == str(run["metrics"]["paths_completed"])


# Records the id of every frame an EventSource receives, before the page sees it.
SPY = """
window.receivedIds = [];
window.EventSource = class extends EventSource {
  constructor(...args) {
    super(...args);
    const types = ["run_started", "plan", "node_started", "tool_call", "node_finished",
                   "candidates", "evaluated", "pruned", "path_completed", "answer_ready",
                   "branched", "vote", "done",
                   "error", "cancelled"];
    const record = (e) => e.data !== undefined && window.receivedIds.push(e.lastEventId);
    for (const type of types) super.addEventListener(type, record);
  }
};
"""
