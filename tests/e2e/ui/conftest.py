"""Browser tests of the run page: Debian's headless Chromium driven by Playwright against the
real app, served with scripted models (tests/support/server.py) inside the test's event loop.

Playwright never downloads a browser here: it launches the system's `/usr/bin/chromium`
(`make test` installs it). Every wait is on a page state (`expect`, `wait_for_*`), none on time.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Locator,
    Page,
    Request,
    async_playwright,
    expect,
)

from app.settings import Settings
from testkit.fakes import FakeCall, Reply, Script, step_to_execute
from testkit.scenario import Scenario
from tests.support.server import Service, serve

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BROWSER_TESTS = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session")]
WAIT_MS = 10_000  # how long a page state may take to appear before the test fails

expect.set_options(timeout=WAIT_MS)

ServiceMaker = Callable[..., AbstractAsyncContextManager[Service]]


@pytest.fixture(scope="session")
def chromium() -> Path:
    """The system's Chromium; Playwright's own browser downloads are impossible here."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs Debian's chromium package")
    return CHROMIUM


# One browser for the whole session (a launch costs about a second); each test gets its own
# context, so no storage or state is shared. The browser tests share the session's loop.
@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh tab (own storage); an uncaught script error on the page fails the test."""
    # Reduced motion: the tree's view jumps to a new zoom instead of easing into it, so what a
    # test measures is the view's final state.
    context = await browser.new_context(
        viewport={"width": 1400, "height": 820}, reduced_motion="reduce"
    )
    context.set_default_timeout(WAIT_MS)
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield tab
    finally:
        await context.close()
    assert errors == [], f"script errors on the page: {errors}"


@pytest.fixture
def service_for(settings: Settings) -> ServiceMaker:
    """`async with service_for(script, tools=[…], **setting_overrides) as svc:`."""

    def make(
        script: Script, tools: list[Any] | None = None, **overrides: Any
    ) -> AbstractAsyncContextManager[Service]:
        return serve(settings.model_copy(update=overrides), script, tools)

    return make


class Gate:
    """Runs `scenario`, but holds the executor's calls for `step` until `release` is set."""

    def __init__(self, scenario: Scenario, step: str) -> None:
        self.scenario = scenario
        self.step = step
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = 0

    async def __call__(self, call: FakeCall) -> Reply:
        if call.role == "executor" and step_to_execute(call) == self.step:
            self.waiting.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return self.scenario.reply(call)


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
