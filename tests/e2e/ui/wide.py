"""A wide search for the tree view's tests and screenshots: a root and three levels of three
children (40 nodes), scripted, with priors and progress scores that differ from node to node
and a vote that picks one path for a stated reason; and the view's geometry as tests read it."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import FloatRect, Page, expect

from testkit.fakes import FakeCall, Reply
from testkit.scenario import Scenario
from tests.support.browser import open_page
from tests.support.server import Service

FANOUT = 3
LEVELS = 3
NODES = sum(FANOUT**level for level in range(LEVELS + 1))  # 40
WINNER = "explore 2.3.1"
VOTE_REASON = f"only the path through {WINNER} backs its claim with a measurement"
# Every run parameter the wide tree needs; the rest are the service's defaults.
PARAMS = {
    "max_paths": 50,
    "max_nodes": 100,
    "max_llm_calls": 1000,
    "max_candidates": FANOUT,
    "strategy": "dfs",
    "satisfaction": 0.99,  # never reached; with early stop on, every path end is judged
}


def wide_tree() -> Scenario:
    """`explore` proposes `explore 1` … `explore 3`, each of those three more, three levels deep.
    The first child of a node has the best prior (0.9, 0.7, 0.5); progress scores vary too."""
    replans: dict[str, list[str]] = {}
    priors: dict[str, float] = {}
    values: dict[str, float] = {"explore": 0.5}
    level = ["explore"]
    for _ in range(LEVELS):
        below = []
        for step in level:
            children = [f"{step}{' ' if step == 'explore' else '.'}{i}" for i in range(1, 4)]
            replans[step] = children
            for i, child in enumerate(children):
                priors[child] = round(0.9 - 0.2 * i, 2)
                values[child] = round(0.3 + 0.1 * ((len(child) + i) % 6), 2)
            below += children
        level = below
    return Scenario(
        plan=["explore"], replans=replans, priors=priors, values=values, vote=vote_for_winner
    )


def vote_for_winner(call: FakeCall) -> Reply:
    """The voter picks the candidate whose path went through WINNER, and says why."""
    blocks = call.prompt.split("### Candidate ")[1:]
    chosen = next((b.split()[0] for b in blocks if WINNER in b), call.enum[0])
    return {"choice": chosen, "reason": VOTE_REASON}


async def open_wide_run(page: Page, svc: Service) -> dict[str, Any]:
    """Start the wide search through the API, open it on the page, wait for its end; the run."""
    accepted = await svc.client.post("/runs", json={"task": "wide", **PARAMS})
    run_id = accepted.json()["run_id"]
    await open_page(page, f"{svc.url}/#/runs/{run_id}")
    await expect(page.locator("#run-status")).to_have_text("done")
    await expect(page.locator(".node")).to_have_count(NODES)
    run: dict[str, Any] = (await svc.client.get(f"/runs/{run_id}")).json()
    return run


# True once the fitted view has settled: every node's box inside the tree pane.
ALL_INSIDE = """() => {
  const pane = document.getElementById("tree").getBoundingClientRect();
  const nodes = [...document.querySelectorAll(".node")];
  return nodes.length > 0 && nodes.every((n) => {
    const b = n.getBoundingClientRect();
    return b.left >= pane.left - 0.5 && b.top >= pane.top - 0.5
      && b.right <= pane.right + 0.5 && b.bottom <= pane.bottom + 0.5;
  });
}"""


async def boxes(page: Page) -> tuple[FloatRect, dict[str, FloatRect]]:
    """The tree pane's box and every node's box, in page pixels."""
    pane = await page.locator("#tree").bounding_box()
    assert pane is not None
    found = {}
    for item in await page.locator(".node").all():
        box = await item.bounding_box()
        assert box is not None
        found[str(await item.get_attribute("data-node-id"))] = box
    return pane, found


def inside(box: FloatRect, pane: FloatRect) -> bool:
    slack = 0.5  # sub-pixel rounding of transformed boxes
    return (
        box["x"] >= pane["x"] - slack
        and box["y"] >= pane["y"] - slack
        and box["x"] + box["width"] <= pane["x"] + pane["width"] + slack
        and box["y"] + box["height"] <= pane["y"] + pane["height"] + slack
    )


async def view(page: Page) -> tuple[float, float, float]:
    """The canvas's transform: (scale, x, y)."""
    matrix: str = await page.locator("#canvas").evaluate("c => getComputedStyle(c).transform")
    a, _b, _c, _d, e, f = (float(v) for v in re.findall(r"-?[\d.e+-]+", matrix))
    return a, e, f


def under(transform: tuple[float, float, float], x: float, y: float) -> tuple[float, float]:
    """The canvas point shown at (x, y) of the pane under `transform`."""
    k, tx, ty = transform
    return (x - tx) / k, (y - ty) / k


async def open_wide_run_fitted(page: Page, svc: Service) -> dict[str, Any]:
    """`open_wide_run`, then wait until the fitted view has settled; the run."""
    run = await open_wide_run(page, svc)
    await page.wait_for_function(ALL_INSIDE)
    return run
