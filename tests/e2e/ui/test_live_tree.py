"""The page follows a run live: the tree grows, nodes change state, the answer and the voted path
show at the end; a run can be cancelled, reloaded mid-run, and reopened from the run list."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

from playwright.async_api import Page, expect

from testkit.gate import Gate
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, node, node_ids, open_page, run_id_of
from tests.support.makers import ServiceMaker
from tests.support.server import Service

pytestmark = BROWSER_TESTS

# A → B and A → C; both paths end after their step. B's executor call is held by the gate.
TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})


@contextlib.asynccontextmanager
async def started_from_form(
    page: Page, service_for: ServiceMaker, task: str
) -> AsyncIterator[tuple[Gate, Service]]:
    """The page on a service of TREE with B's executor held by the gate, and a run of `task`
    started from its form: the gate and the service."""
    gate = Gate(TREE, "B")
    async with service_for(gate) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", task)
        await page.fill("#param-max_paths", "2")
        await page.select_option("#param-strategy", "dfs")  # runs B and C side by side
        await page.click("#start")
        yield gate, svc


async def test_a_started_run_grows_live_and_ends_with_the_voted_path_highlighted(
    page: Page, service_for: ServiceMaker
) -> None:
    async with started_from_form(page, service_for, "Which branch answers best?") as (gate, svc):
        await expect(node(page, "A")).to_have_attribute("data-status", "done")
        await expect(node(page, "B")).to_have_attribute("data-status", "running")
        await expect(node(page, "C")).to_have_class(re.compile(r"\bcandidate\b"))
        await expect(page.locator("#run-status")).to_have_text("running")
        await expect(page.locator("#cost-paths")).to_have_text("1")
        await expect(page.locator(".node.chosen")).to_have_count(0)
        # Costs are live: the engine's model-call count shows while B is still held.
        await expect(page.locator("#cost-calls")).to_have_text(re.compile(r"^\d+ \(.*planner 1"))
        gate.release.set()

        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(node(page, "B")).to_have_attribute("data-status", "done")
        run = (await svc.client.get(f"/runs/{run_id_of(page)}")).json()
        highlighted = await node_ids(page, ".node.chosen")
        chosen_edges = await page.locator(".edge.chosen").count()
        answer = await page.locator("#answer").inner_text()
        calls = await page.locator("#cost-calls").inner_text()
        stop_reason = await page.locator("#stop-reason").inner_text()
        listed = await page.locator(".run-item").first.get_attribute("data-status")

    assert run["status"] == "done"
    assert highlighted == run["path"]
    assert chosen_edges == len(run["path"]) - 1
    assert answer.strip() == run["answer"]
    assert stop_reason == run["stop_reason"]
    assert calls.startswith(f"{run['metrics']['llm_calls']} (")
    assert f"planner {run['metrics']['llm_calls_by_role']['planner']}" in calls
    assert listed == "done"  # the run list was refreshed when the run ended


async def test_cancel_stops_the_running_run_and_its_steps(
    page: Page, service_for: ServiceMaker
) -> None:
    async with started_from_form(page, service_for, "Cancel me") as (gate, svc):
        await expect(node(page, "B")).to_have_attribute("data-status", "running")
        await page.click("#cancel")

        await expect(page.locator("#run-status")).to_have_text("cancelled")
        await expect(node(page, "B")).to_have_attribute("data-status", "cancelled")
        await expect(page.locator("#stop-reason")).to_have_text("cancelled")
        await expect(page.locator("#cancel")).to_be_disabled()
        await expect(page.locator(".node.chosen")).to_have_count(0)
        run = (await svc.client.get(f"/runs/{run_id_of(page)}")).json()

    assert run["status"] == "cancelled"
    assert gate.cancelled == 1  # the held model call was stopped, not left to finish


async def test_a_reload_mid_run_restores_the_tree_and_follows_the_rest(
    page: Page, service_for: ServiceMaker
) -> None:
    async with started_from_form(page, service_for, "Reload me") as (gate, _):
        await expect(node(page, "C")).to_have_class(re.compile(r"\bcandidate\b"))
        before = await node_ids(page, ".node")
        address = page.url

        await page.reload()
        await expect(node(page, "B")).to_have_attribute("data-status", "running")
        await expect(node(page, "C")).to_have_class(re.compile(r"\bcandidate\b"))
        after = await node_ids(page, ".node")
        gate.release.set()
        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(page.locator(".node.chosen")).to_have_count(2)
        final = await node_ids(page, ".node")

    assert page.url == address
    assert after == before
    assert final == before  # nothing drawn twice after the replay


async def test_a_finished_run_reopens_from_the_run_list(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(TREE) as svc:
        json = {"Accept": "application/json"}
        older = (
            await svc.client.post("/solve", json={"task": "older", "max_paths": 2}, headers=json)
        ).json()
        await svc.client.post("/solve", json={"task": "newer", "max_paths": 1}, headers=json)
        await open_page(page, svc.url)
        listed = await page.locator(".run-item").all_inner_texts()

        await page.locator(".run-item", has_text="older").click()
        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(page.locator("#run-task")).to_have_text("older")
        await expect(page.locator(".node")).to_have_count(len(older["nodes"]))
        highlighted = await node_ids(page, ".node.chosen")
        answer = await page.locator("#answer").inner_text()
        wall = await page.locator("#cost-wall").inner_text()
        opened = await page.locator(".run-item.open").inner_text()

    assert [text.split()[-1] for text in listed] == ["newer", "older"]  # newest first
    assert run_id_of(page) == older["run_id"]
    assert highlighted == older["path"]
    assert answer.strip() == older["answer"]
    assert wall.endswith(" s")
    assert opened.endswith("older")


async def test_a_failed_run_shows_its_error(page: Page, service_for: ServiceMaker) -> None:
    no_plan = Scenario(plan=[])  # the planner's plan is empty, twice: the run fails
    async with service_for(no_plan) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "Unplannable")
        await page.click("#start")

        await expect(page.locator("#run-status")).to_have_text("failed")
        await expect(page.locator("#run-error")).to_contain_text("(plan)")
        await expect(page.locator("#stop-reason")).to_have_text("error")
        await expect(page.locator("#stream-state")).to_have_text("")  # closed, not re-joining
        run = (await svc.client.get(f"/runs/{run_id_of(page)}")).json()

    assert run["status"] == "failed"
    assert await page.locator(".node").count() == 0
