"""A finished search as the README shows it, and a wide one fitted to the window. The pictures
go to the test's folder; with UPDATE_SCREENSHOTS=1 they replace docs/screenshot.png,
docs/screenshot-node.png and docs/screenshot-wide.png."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from playwright.async_api import Page, expect

from testkit.fakes import FakeCall, Reply, last_done_step, step_to_execute
from testkit.scenario import Scenario
from tests.e2e.ui.wide import ALL_INSIDE, open_wide_run, wide_tree
from tests.support.browser import BROWSER_TESTS, node, open_page
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS

DOCS = Path(__file__).resolve().parents[3] / "docs"
PNG = b"\x89PNG\r\n\x1a\n"

FIND = "Find the original Tree of Thoughts paper"
SUMMARISE = "Summarise its Game of 24 result"
RERUN = "Check independent re-runs of the Game of 24 numbers"
BASELINE = "Compare with chain-of-thought baselines"
WHY = "Explain why search over thoughts helps"
SOCIAL = "Search social media for Game of 24 anecdotes"

RESULTS = {
    FIND: "Yao et al. (2023), 'Tree of Thoughts: Deliberate Problem Solving with Large Language "
    "Models', arXiv:2305.10601; evaluated on Game of 24, creative writing and mini crosswords.",
    SUMMARISE: "With GPT-4 and breadth b=5, ToT solves 74% of Game of 24 games; "
    "chain-of-thought prompting solves 4%.",
    BASELINE: "CoT: 4%, CoT-SC (k=100): 9%, IO prompting: 7.3%; ToT (b=1): 45%, ToT (b=5): 74%.",
    WHY: "ToT generates several candidate next equations, scores each as sure/likely/impossible "
    "and backtracks from dead ends, which a single left-to-right chain cannot do.",
}
ANSWERS = {
    SUMMARISE: "**Tree of Thoughts solves 74% of Game of 24 games** with GPT-4, against 4% for "
    "chain-of-thought prompting ([Yao et al., 2023](https://arxiv.org/abs/2305.10601)).",
    WHY: "**Tree of Thoughts solves 74% of Game of 24 games** with GPT-4, against 4% for "
    "chain-of-thought prompting and 9% for self-consistency over 100 samples "
    "([Yao et al., 2023](https://arxiv.org/abs/2305.10601)).\n\n"
    "Why search helps:\n\n"
    "- it **proposes several next equations** instead of committing to one;\n"
    "- it **evaluates** each partial state (sure / likely / impossible) and drops hopeless ones;\n"
    "- it **backtracks**, so one early mistake does not sink the whole solution.",
}
PAPER = {"title": "Tree of Thoughts (Yao et al., 2023)", "url": "https://arxiv.org/abs/2305.10601"}


@tool(response_format="content_and_artifact")
async def arxiv(query: str) -> tuple[str, dict[str, Any]]:
    """Search arXiv."""
    return RESULTS[FIND], {"ok": True, "error_kind": None, "sources": [PAPER]}


class Research(Scenario):
    """The scripted tree with readable texts."""

    def reply(self, call: FakeCall) -> Reply:
        reply = super().reply(call)
        if call.role == "executor" and isinstance(reply, AIMessage) and not reply.tool_calls:
            step = step_to_execute(call)
            return AIMessage(content=RESULTS.get(step, reply.text))
        if call.role == "responder":
            return ANSWERS[last_done_step(call)]
        return reply


def vote_for_the_explanation(call: FakeCall) -> Reply:
    """The voter picks the candidate whose evidence explains why."""
    blocks = call.prompt.split("### Candidate ")[1:]
    chosen = next((b.split()[0] for b in blocks if WHY in b), call.enum[0])
    return {"choice": chosen, "reason": "it explains the result"}


SEARCH = Research(
    plan=[FIND, SUMMARISE],
    replans={FIND: [SUMMARISE, RERUN, BASELINE, SOCIAL], BASELINE: [WHY]},
    fail={RERUN},
    tools={FIND: ("arxiv", {"query": "tree of thoughts game of 24"})},
    priors={SUMMARISE: 0.7, RERUN: 0.55, BASELINE: 0.8, WHY: 0.85},
    not_viable={SOCIAL},
    values={FIND: 0.4, SUMMARISE: 0.65, BASELINE: 0.75, WHY: 0.9},
    vote=vote_for_the_explanation,
)


async def test_a_finished_search_is_captured_for_the_readme(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    async with service_for(SEARCH, tools=[arxiv]) as svc:
        await open_page(page, svc.url)
        await page.set_viewport_size({"width": 1680, "height": 900})
        await page.fill("#task", "How well does Tree of Thoughts do on Game of 24, and why?")
        await page.fill("#param-max_paths", "2")
        await page.fill("#param-max_candidates", "4")
        await page.select_option("#param-strategy", "dfs")
        await page.click("#start")
        await expect(page.locator("#run-status")).to_have_text("done")
        await expect(page.locator(".node.chosen")).to_have_count(3)
        await expect(node(page, SOCIAL)).to_have_attribute("data-status", "pruned")
        await page.screenshot(path=tmp_path / "screenshot.png", animations="disabled")

        await node(page, FIND).click()
        await expect(page.locator("#node-details .sources a")).to_have_text(PAPER["title"])
        await page.screenshot(path=tmp_path / "screenshot-node.png", animations="disabled")

    keep(tmp_path, "screenshot.png", "screenshot-node.png")


async def test_a_wide_search_fitted_to_the_window_is_captured_for_the_docs(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    async with service_for(wide_tree()) as svc:
        await open_wide_run(page, svc)
        await page.wait_for_function(ALL_INSIDE)
        await page.screenshot(path=tmp_path / "screenshot-wide.png", animations="disabled")

    keep(tmp_path, "screenshot-wide.png")


def keep(folder: Path, *names: str) -> None:
    """Check the pictures; with UPDATE_SCREENSHOTS=1 copy them into docs/."""
    for name in names:
        assert (folder / name).read_bytes().startswith(PNG)
        if os.environ.get("UPDATE_SCREENSHOTS") == "1":
            shutil.copyfile(folder / name, DOCS / name)
