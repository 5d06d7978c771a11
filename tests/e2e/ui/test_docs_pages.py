"""The API docs pages (/docs: Swagger UI, /redoc: Redoc) render from the service's own files:
no request leaves 127.0.0.1 and nothing breaks the page policy (no inline script, no style
the page did not allow)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from playwright.async_api import Page, expect

from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, Watch
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS


@asynccontextmanager
async def _docs_page(page: Page, service_for: ServiceMaker, path: str) -> AsyncIterator[Watch]:
    """The service's page at `path` open in `page`; what the page asked for is watched."""
    watch = Watch(page)
    async with service_for(Scenario(plan=["A"])) as svc:
        await page.goto(f"{svc.url}{path}")
        yield watch


async def test_swagger_ui_renders_with_no_request_leaving_the_host(
    page: Page, service_for: ServiceMaker
) -> None:
    async with _docs_page(page, service_for, "/docs") as watch:
        await expect(page.locator(".info .title")).to_contain_text("plantree")
        operation = page.locator(".opblock-summary", has_text="Start a run in the background")
        await operation.click()  # an expanded operation draws its schemas as well
        await expect(page.locator(".opblock-body").first).to_be_visible()

    assert watch.hosts() == {"127.0.0.1"}
    assert any(url.endswith("/openapi.json") for url in watch.urls)
    assert watch.refused == []
    assert watch.violations == []


async def test_redoc_renders_with_no_request_leaving_the_host(
    page: Page, service_for: ServiceMaker
) -> None:
    async with _docs_page(page, service_for, "/redoc") as watch:
        await expect(page.locator("h1", has_text="plantree")).to_be_visible()
        heading = page.locator("h2", has_text="Start a run in the background")
        await expect(heading).to_be_visible()
        # Redoc styled itself: its sidebar is laid out by its injected styles, not the defaults.
        menu = page.locator(".menu-content")
        await expect(menu).to_have_css("position", "sticky")

    assert watch.hosts() == {"127.0.0.1"}
    assert any(url.endswith("/openapi.json") for url in watch.urls)
    # The one thing Redoc tries to load from elsewhere, its vendor's logo in the sidebar's
    # footer, is refused in the browser by the policy (and Redoc then hides it).
    assert [urlsplit(url).hostname for url in watch.refused] == ["cdn.redoc.ly"]
    assert [v for v in watch.violations if "cdn.redoc.ly" not in v] == []
