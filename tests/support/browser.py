"""What the browser tests share besides their fixtures (tests/e2e/ui/conftest.py): the marks,
the gate that holds a run at one step (testkit/gate.py), and ways to read the run page."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.async_api import ConsoleMessage, Locator, Page, Request, expect

BROWSER_TESTS = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session")]
WAIT_MS = 10_000  # how long a page state may take to appear before the test fails


async def open_page(page: Page, url: str) -> None:
    """Load the page and wait until its first requests are answered."""
    await page.goto(url)
    await expect(page.locator("body")).to_have_attribute("data-ready", "true")


def node(page: Page, step: str) -> Locator:
    """The tree node whose step is exactly `step` (ids depend on the engine's numbering)."""
    text = page.locator(".node-step", has_text=re.compile(f"^{re.escape(step)}$"))
    return page.locator(".node").filter(has=text)


async def node_ids(page: Page, selector: str) -> list[str]:
    """The ids of the drawn nodes matching `selector`, in drawing order."""
    ids: list[str] = await page.locator(selector).evaluate_all(
        "nodes => nodes.map(n => n.dataset.nodeId)"
    )
    return ids


def run_id_of(page: Page) -> str:
    """The open run's id, from the page's address (`#/runs/<id>`)."""
    match = re.search(r"#/runs/(\w+)$", page.url)
    assert match, page.url
    return match.group(1)


class Watch:
    """What a tab asked the network for, and the policy violations its console reported."""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        self.refused: list[str] = []
        self.violations: list[str] = []
        page.on("request", self.request)
        page.on("requestfailed", self.failed)
        page.on("console", self.console)

    def request(self, request: Request) -> None:
        self.urls.append(request.url)

    def failed(self, request: Request) -> None:
        # Refused by the page's policy inside the browser: the request never left it.
        if request.failure == "csp":
            self.refused.append(request.url)

    def console(self, message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            self.violations.append(message.text)

    def hosts(self) -> set[str | None]:
        """The hosts requests went to (data: URLs and requests the policy refused aside)."""
        sent = [url for url in self.urls if url not in self.refused]
        return {urlsplit(url).hostname for url in sent if not url.startswith("data:")}
