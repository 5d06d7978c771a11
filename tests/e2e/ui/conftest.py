"""Browser tests of the run page: Debian's headless Chromium driven by Playwright against the
real app, served with scripted models (tests/support/server.py) inside the test's event loop.

Playwright never downloads a browser here: it launches the system's `/usr/bin/chromium`
(`make test` installs it). Every wait is on a page state (`expect`, `wait_for_*`), none on time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import (
    Browser,
    Page,
    async_playwright,
    expect,
)

from tests.support.browser import WAIT_MS

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

expect.set_options(timeout=WAIT_MS)


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
