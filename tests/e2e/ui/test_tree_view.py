"""The tree view of a wide search (a root and three levels of three children: 40 nodes): it fits
the window, zooms and pans, and shows the search's reasoning (each node's prior, visits and
backed-up value; the chosen path; the vote's reason)."""

from __future__ import annotations

import json
import math
from typing import Any

from playwright.async_api import Page, expect

from agents.tree import node_values
from testkit.gate import Gate
from tests.e2e.ui.wide import (
    ALL_INSIDE,
    FANOUT,
    LEVELS,
    NODES,
    PARAMS,
    VOTE_REASON,
    WINNER,
    boxes,
    inside,
    open_wide_run,
    open_wide_run_fitted,
    under,
    view,
    wide_tree,
)
from tests.support.browser import BROWSER_TESTS, node, node_ids, open_page
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS


async def test_a_wide_tree_fits_the_window_one_to_one_does_not_and_a_smaller_window_refits(
    page: Page, service_for: ServiceMaker
) -> None:
    assert page.viewport_size == {"width": 1400, "height": 820}
    async with service_for(wide_tree()) as svc:
        await open_wide_run_fitted(page, svc)
        pane, fitted = await boxes(page)
        fit_pressed = await page.locator("#zoom-fit").get_attribute("aria-pressed")
        scale, _, _ = await view(page)
        far = await page.locator("#tree").get_attribute("class")

        await page.click("#zoom-actual")
        _, actual = await boxes(page)
        actual_scale, _, _ = await view(page)
        near = await page.locator("#tree").get_attribute("class")

        await page.click("#zoom-fit")
        await page.set_viewport_size({"width": 1100, "height": 640})  # a smaller window
        await page.wait_for_function(ALL_INSIDE)
        smaller, _, _ = await view(page)

    assert len(fitted) == NODES
    assert [n for n, box in fitted.items() if not inside(box, pane)] == []
    assert fit_pressed == "true"
    assert scale < 1
    assert actual_scale == 1
    assert far == "tree far"  # too small to read: nodes show their values alone
    assert near == "tree"
    assert any(not inside(box, pane) for box in actual.values())  # what fitting is for
    assert smaller < scale


async def test_the_view_fits_again_as_the_tree_grows(page: Page, service_for: ServiceMaker) -> None:
    gate = Gate(wide_tree(), "explore 3")  # its subtree (13 nodes) waits until released
    async with service_for(gate) as svc:
        accepted = await svc.client.post("/runs", json={"task": "growing", **PARAMS})
        await open_page(page, f"{svc.url}/#/runs/{accepted.json()['run_id']}")
        await expect(page.locator(".node")).to_have_count(NODES - FANOUT**2 - FANOUT)
        await page.wait_for_function(ALL_INSIDE)
        held, _, _ = await view(page)

        gate.release.set()
        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(page.locator(".node")).to_have_count(NODES)
        await page.wait_for_function(ALL_INSIDE)
        grown, _, _ = await view(page)
        fit_pressed = await page.locator("#zoom-fit").get_attribute("aria-pressed")

    assert grown < held  # a taller tree, scaled down to fit
    assert fit_pressed == "true"


async def test_buttons_and_the_wheel_zoom_about_a_point_and_a_drag_pans(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(wide_tree()) as svc:
        await open_wide_run_fitted(page, svc)
        pane = await page.locator("#tree").bounding_box()
        assert pane is not None
        fitted = await view(page)

        await page.click("#zoom-in")
        zoomed_in = await view(page)
        level = await page.locator("#zoom-level").inner_text()
        fit_pressed = await page.locator("#zoom-fit").get_attribute("aria-pressed")

        # The wheel zooms about the pointer: the canvas point under it stays put.
        px, py = pane["x"] + 200, pane["y"] + 300
        await page.mouse.move(px, py)
        await page.mouse.wheel(0, -300)
        await expect(page.locator("#zoom-level")).not_to_have_text(level)
        wheeled = await view(page)

        # A drag from an empty corner pans by exactly the distance moved.
        start_x, start_y = pane["x"] + 6, pane["y"] + pane["height"] - 30
        await page.mouse.move(start_x, start_y)
        await page.mouse.down()
        await page.mouse.move(start_x + 60, start_y - 20, steps=4)
        await page.mouse.move(start_x + 120, start_y - 40, steps=4)
        await page.mouse.up()
        dragged = await view(page)

        await page.click("#zoom-fit")
        await page.wait_for_function(ALL_INSIDE)
        refitted = await view(page)

    assert math.isclose(zoomed_in[0], fitted[0] * 1.25, rel_tol=1e-4)
    assert fit_pressed == "false"  # a manual zoom stops the automatic fit
    assert wheeled[0] > zoomed_in[0]
    before = under(zoomed_in, px - pane["x"], py - pane["y"])
    after = under(wheeled, px - pane["x"], py - pane["y"])
    assert math.isclose(before[0], after[0], abs_tol=0.5)
    assert math.isclose(before[1], after[1], abs_tol=0.5)
    assert math.isclose(dragged[0], wheeled[0])
    assert math.isclose(dragged[1] - wheeled[1], 120, abs_tol=0.5)
    assert math.isclose(dragged[2] - wheeled[2], -40, abs_tol=0.5)
    assert all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip(refitted, fitted, strict=True))


async def test_a_drag_that_starts_on_a_node_pans_without_opening_it_and_f_fits_again(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(wide_tree()) as svc:
        await open_wide_run_fitted(page, svc)
        root = await node(page, "explore").bounding_box()
        assert root is not None
        before = await view(page)

        x, y = root["x"] + root["width"] / 2, root["y"] + root["height"] / 2
        await page.mouse.move(x, y)
        await page.mouse.down()
        await page.mouse.move(x + 80, y + 10, steps=5)
        await page.mouse.up()
        after = await view(page)
        details_hidden = await page.locator("#node-card").is_hidden()

        await node(page, "explore").click()  # a click without a drag still opens it
        await expect(page.locator("#node-title")).to_contain_text("done")
        await page.keyboard.press("f")  # the focus is in the tree: its keys work
        await page.wait_for_function(ALL_INSIDE)
        fitted = await view(page)

    assert math.isclose(after[1] - before[1], 80, abs_tol=0.5)
    assert details_hidden
    assert all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip(fitted, before, strict=True))


async def test_a_pinch_zooms_about_the_fingers(page: Page, service_for: ServiceMaker) -> None:
    async with service_for(wide_tree()) as svc:
        await open_wide_run_fitted(page, svc)
        pane = await page.locator("#tree").bounding_box()
        assert pane is not None
        before = await view(page)
        touch = await page.context.new_cdp_session(page)
        cx, cy = pane["x"] + pane["width"] / 2, pane["y"] + pane["height"] / 2

        async def fingers(kind: str, apart: float) -> None:
            points = [{"x": cx - apart / 2, "y": cy}, {"x": cx + apart / 2, "y": cy}]
            await touch.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

        await fingers("touchStart", 100)
        for apart in (120, 160, 200):  # the fingers spread to twice their distance
            await fingers("touchMove", apart)
        await touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        after = await view(page)
        details_hidden = await page.locator("#node-card").is_hidden()

    assert math.isclose(after[0], before[0] * 2, rel_tol=1e-3)
    centre = (cx - pane["x"], cy - pane["y"])
    for a, b in zip(under(before, *centre), under(after, *centre), strict=True):
        assert math.isclose(a, b, abs_tol=0.5)
    assert details_hidden  # the fingers opened nothing


def search_numbers(record: dict[str, Any], value: float) -> dict[str, str]:
    """What a node's box should show for the engine's node record and node value."""
    visits, prior = record["visits"], record["prior"]
    return {
        "prior": f"prior {prior:.2f}" if prior is not None else "",
        "value": f"value {value:.2f}",
        "visits": f"{visits} visit{'' if visits == 1 else 's'}" if visits else "",
        "far": f"{value:.2f}",  # zoomed far out: the value alone
    }


async def test_every_node_shows_its_prior_value_and_visits_as_the_engine_counts_them(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(wide_tree()) as svc:
        run = await open_wide_run(page, svc)
        drawn: dict[str, dict[str, str]] = await page.locator(".node").evaluate_all(
            """nodes => Object.fromEntries(nodes.map(n => [n.dataset.nodeId, {
                 prior: n.querySelector(".node-prior").textContent,
                 value: n.querySelector(".node-value").textContent,
                 visits: n.querySelector(".node-visits").textContent,
                 far: n.querySelector(".node-far").textContent}]))"""
        )
        by_step = {n["step"]: n for n in run["nodes"]}
        middle = by_step["explore 2"]
        await node(page, "explore 2").click()
        details = page.locator("#node-details")
        await expect(details.locator("#detail-prior")).to_have_text(f"{middle['prior']:.2f}")
        values = node_values({n["id"]: n for n in run["nodes"]})
        await expect(details.locator("#detail-score")).to_have_text("—")  # judged by its children
        await expect(details.locator("#detail-value")).to_have_text(f"{values[middle['id']]:.2f}")
        await expect(details.locator("#detail-visits")).to_have_text(str(middle["visits"]))

    assert drawn == {n["id"]: search_numbers(n, values[n["id"]]) for n in run["nodes"]}
    # Its own expansion, its children's, and its leaves' progress scores (path ends are judged).
    assert middle["visits"] == 1 + FANOUT + FANOUT**2
    assert drawn[middle["id"]]["prior"] == "prior 0.70"


async def test_the_chosen_path_is_marked_and_the_vote_reason_shown(
    page: Page, service_for: ServiceMaker
) -> None:
    async with service_for(wide_tree()) as svc:
        run = await open_wide_run(page, svc)
        trace = (await svc.client.get(f"/runs/{run['run_id']}/trace")).text
        vote = next(
            e["event"] for e in map(json.loads, trace.splitlines()) if e["event"]["type"] == "vote"
        )
        marked = await node_ids(page, ".node.chosen")
        winners = await node_ids(page, ".node.winner")
        winner_status = await page.locator(".node.winner .node-status").inner_text()
        chosen_edges = await page.locator(".edge.chosen").count()
        await expect(page.locator("#vote-reason")).to_have_text(VOTE_REASON)
        listed = await page.locator("#vote-candidates .pick").evaluate_all(
            "picks => picks.map(p => p.dataset.nodeId)"
        )
        chosen_listed = await node_ids(page, "#vote-candidates .chosen .pick")
        path_listed = await node_ids(page, "#chosen-path .pick")
        path_steps = await page.locator("#chosen-path .pick-step").all_inner_texts()

        await page.locator("#chosen-path .pick").last.click()
        await expect(page.locator("#node-title")).to_have_text(f"{run['chosen_id']} · done")

    steps = {n["id"]: n["step"] for n in run["nodes"]}
    assert steps[run["chosen_id"]] == WINNER
    assert marked == run["path"]
    assert winners == [run["chosen_id"]]
    assert winner_status == "done · voted"
    assert chosen_edges == len(run["path"]) - 1
    assert vote["reason"] == VOTE_REASON
    assert sorted(listed) == sorted(vote["candidates"])
    assert len(listed) == FANOUT**LEVELS  # every leaf answered, every answer was a candidate
    assert listed[0] == run["chosen_id"]  # the chosen answer first
    assert chosen_listed == [run["chosen_id"]]
    assert path_listed == run["path"]
    assert path_steps == [steps[i] for i in run["path"]]
