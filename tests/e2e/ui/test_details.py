"""What a click on a node shows (result, tool calls, sources, scores), how pruned candidates
look, and how the answer's Markdown is rendered (safely)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import tool
from playwright.async_api import Page, expect

from agents.tree import node_value
from testkit.fakes import FakeCall, Reply
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, node, open_page, run_id_of
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS

PAPER = {"title": "Tree of Thoughts (Yao et al., 2023)", "url": "https://arxiv.org/abs/2305.10601"}


@tool(response_format="content_and_artifact")
async def lookup(query: str) -> tuple[str, dict[str, Any]]:
    """Look something up."""
    return f"found {query}", {"ok": True, "error_kind": None, "sources": [PAPER]}


# A root step that looks the paper up, one child that succeeds and one that fails.
LOOKED_UP = Scenario(
    plan=["A"],
    replans={"A": ["B", "D"]},
    fail={"D"},
    tools={"A": ("lookup", {"query": "tree of thoughts"})},
)


async def _run_to_the_end(page: Page, url: str, task: str) -> None:
    """Open the page at `url`, start `task` from the form and wait until the run is done."""
    await open_page(page, url)
    await page.fill("#task", task)
    await page.select_option("#param-strategy", "mcts")  # the tree these tests draw
    await page.click("#start")
    await expect(page.locator("#run-status")).to_have_text("done")


async def test_clicking_a_node_shows_its_result_tool_calls_and_sources(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(LOOKED_UP, tools=[lookup]) as svc:
        await _run_to_the_end(page, svc.url, "details")

        await node(page, "A").click()
        await expect(page.locator("#node-title")).to_contain_text("done")
        await expect(page.locator("#node-details .result")).to_have_text("result of A")
        calls = await page.locator("#node-details .tool-calls li").all_inner_texts()
        source = page.locator("#node-details .sources a")
        await expect(source).to_have_text(PAPER["title"])
        await expect(source).to_have_attribute("href", PAPER["url"])
        await expect(page.locator("#cost-tools")).to_have_text("1")

        await node(page, "D").click()
        await expect(node(page, "D")).to_have_attribute("data-status", "failed")
        await expect(node(page, "D")).to_have_class("node selected")
        await expect(page.locator("#node-title")).to_contain_text("failed")
        await expect(page.locator("#node-details .error")).not_to_be_empty()
        await page.click("#node-close")
        await expect(page.locator("#node-card")).to_be_hidden()

    assert len(calls) == 1
    assert calls[0].startswith('lookup({"query":"tree of thoughts"}) ok')


ANSWER = (
    "**Tree of Thoughts** solves 74% of Game of 24 ([the paper](https://arxiv.org/abs/2305.10601)).\n"
    "\n"
    "- search over partial solutions\n"
    "- a value check per step\n"
    "\n"
    '<img src="x" onerror="window.pwned = 1"><script>window.pwned = 2</script>'
    '<a href="javascript:window.pwned = 3">click</a>'
)


async def answer_in_markdown(call: FakeCall) -> Reply:
    if call.role == "responder":
        return ANSWER
    return Scenario(plan=["A"]).reply(call)


async def test_the_answer_is_rendered_markdown_with_no_script_from_the_model(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(answer_in_markdown) as svc:
        await _run_to_the_end(page, svc.url, "markdown")
        answer = page.locator("#answer")

        await expect(answer.locator("strong")).to_have_text("Tree of Thoughts")
        await expect(answer.locator("li")).to_have_count(2)
        await expect(answer.locator("a").first).to_have_attribute(
            "href", "https://arxiv.org/abs/2305.10601"
        )
        await expect(answer.locator("a").first).to_have_attribute("target", "_blank")
        await expect(answer.locator("script")).to_have_count(0)
        await expect(answer.locator("[onerror]")).to_have_count(0)
        await expect(answer.locator("a[href^='javascript']")).to_have_count(0)
        await answer.locator("a", has_text="click").click()  # a sanitised link runs nothing
        pwned = await page.evaluate("window.pwned")

    assert pwned is None


# B scored and valued, C judged not viable (pruned).
SCORED = Scenario(
    plan=["A"],
    replans={"A": ["B", "C"]},
    not_viable={"C"},
    priors={"B": 0.8},
    values={"A": 0.6, "B": 0.9},
)


async def test_scores_values_and_pruned_candidates_are_drawn(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(SCORED) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "scored")
        await page.select_option("#param-strategy", "mcts")
        await page.click("#more-params summary")
        await page.fill("#param-satisfaction", "0.99")  # early stop on: path ends are judged
        await page.click("#start")
        await expect(page.locator("#run-status")).to_have_text("done")
        run_id = run_id_of(page)
        run = (await svc.client.get(f"/runs/{run_id}")).json()
        trace = (await svc.client.get(f"/runs/{run_id}/trace")).text
        by_step = {n["step"]: n for n in run["nodes"]}
        pruned = next(
            e["event"]
            for e in map(json.loads, trace.splitlines())
            if e["event"]["type"] == "pruned"
        )

        await expect(node(page, "C")).to_have_attribute("data-status", "pruned")
        await expect(node(page, "C")).to_have_attribute("title", f"C\npruned: {pruned['reason']}")
        await expect(node(page, "C").locator(".node-prior")).to_have_text("prior 0.50")
        await expect(node(page, "C").locator(".node-visits")).to_have_text("")
        await expect(node(page, "B").locator(".node-score")).to_have_text("score 0.90")
        await expect(page.locator(".edge.pruned")).to_have_count(1)
        await expect(page.locator("#cost-cache")).to_have_text(str(run["metrics"]["cache_hits"]))
        await node(page, "A").click()
        root = by_step["A"]
        value = node_value({n["id"]: n for n in run["nodes"]}, root["id"])
        await expect(page.locator("#detail-score")).to_have_text("—")  # judged through B
        await expect(page.locator("#detail-value")).to_have_text(f"{value:.2f}")
        await expect(page.locator("#detail-visits")).to_have_text(str(root["visits"]))
        await expect(node(page, "A").locator(".node-visits")).to_have_text("2 visits")
        await node(page, "B").click()
        await expect(page.locator("#node-details")).to_contain_text("proposed: judged B")
        await expect(page.locator("#node-details")).to_contain_text("progress: progress of B")

    assert pruned["node_id"] == by_step["C"]["id"]
    # A's expansion (observed through B's prior) and B's progress score, backed up.
    assert (root["visits"], root["value_sum"]) == (2, 0.8 + 0.9)
    assert value == (0.8 + 0.9) / 2  # A is worth its best child, B: prior and score blended
