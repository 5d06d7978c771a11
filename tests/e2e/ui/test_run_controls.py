"""The page's controls of an open run: a plan waiting for approval is shown as editable lines
and run as edited; a node's Prune and Add step buttons steer the search (its pruned branch
never runs, the added step does)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from testkit.fakes import executed_steps
from testkit.gate import Gate
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, node, open_page, run_id_of
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS


async def test_a_waiting_plan_is_edited_on_the_page_and_the_run_follows_it(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(Scenario(plan=["A", "B"])) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "review the plan")
        await page.click("#more-params summary")
        await page.check("#param-approve_plan")
        await page.click("#start")

        await expect(page.locator("#run-status")).to_have_text("interrupted")
        await expect(page.locator("#plan-review")).to_be_visible()
        await expect(page.locator("#plan-steps")).to_have_value("A\nB")
        await page.fill("#plan-steps", "C\n")
        await page.click("#plan-approve")

        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(page.locator("#plan-review")).to_be_hidden()
        await expect(node(page, "C")).to_have_attribute("data-status", "done")
        run = (await svc.client.get(f"/runs/{run_id_of(page)}")).json()

    assert [n["step"] for n in run["nodes"]] == ["C"]


async def test_prune_and_add_step_buttons_steer_the_running_search(
    page: Page, service_for: ServiceMaker
) -> None:
    gate = Gate(Scenario(plan=["A"], replans={"A": ["B", "C"]}), "B")
    async with service_for(gate) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "steer it")
        await page.select_option("#param-strategy", "mcts")
        await page.fill("#param-max_paths", "4")
        await page.click("#more-params summary")
        await page.fill("#param-max_concurrency", "1")
        await page.click("#start")
        await expect(node(page, "B")).to_have_attribute("data-status", "running")

        await node(page, "C").click()
        await expect(page.locator("#steer-boost")).to_be_enabled()
        await page.click("#steer-prune")
        await node(page, "A").click()
        await expect(page.locator("#steer-boost")).to_be_disabled()  # A has run
        await page.fill("#steer-step", "D")
        await page.click("#steer-add-button")
        await expect(page.locator("#steer-error")).to_be_hidden()
        gate.release.set()

        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(node(page, "C")).to_have_attribute("data-status", "pruned")
        await expect(node(page, "D")).to_have_attribute("data-status", "done")
        await expect(page.locator("#node-steer")).to_be_hidden()  # an ended run takes none

    executed = executed_steps(svc.models)
    assert "C" not in executed
    assert "D" in executed
