"""The answer's citations on the page: each marker opens the quote it was verified on and its
source, a sentence no verified quote backs is marked, and a quote carrying markup stays text."""

from __future__ import annotations

from langchain_core.tools import BaseTool, StructuredTool
from playwright.async_api import Page, expect

from testkit.fakes import FakeCall, Reply
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, Watch, open_page
from tests.support.makers import ServiceMaker
from tools.results import Hit, ToolResult, render_hits

pytestmark = BROWSER_TESTS

# The page itself carries markup: a quote of it must be shown as the text it is.
PAGE = Hit(
    title="France",
    url="https://en.wikipedia.org/wiki/France",
    text='Paris is the capital <img src=x onerror="window.pwned=1"> of France and its largest '
    "city.",
)
QUOTE = 'Paris is the capital <img src=x onerror="window.pwned=1"> of France'
ANSWER = {
    "answer": "Paris is the capital of France.[1] It has a famous tower.",
    "citations": [{"marker": 1, "evidence_id": "E1", "quote": QUOTE}],
}
SCENARIO = Scenario(
    plan=["Find the capital"], tools={"Find the capital": ("search", {"query": "q"})}
)


def _search() -> BaseTool:
    async def search(query: str) -> ToolResult:
        return render_hits("search", query, [PAGE], 3000)

    return StructuredTool.from_function(
        coroutine=search,
        name="search",
        description="Search.",
        response_format="content_and_artifact",
    )


async def citing(call: FakeCall) -> Reply:
    return ANSWER if call.role == "responder" else SCENARIO.reply(call)


async def test_a_marker_opens_its_verified_quote_and_unsupported_sentences_are_marked(
    page: Page, service_for: ServiceMaker
) -> None:
    watch = Watch(page)
    async with service_for(citing, tools=[_search()]) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "What is the capital of France?")
        await page.click("#start")
        await expect(page.locator("#run-status")).to_have_text("done")

        answer = page.locator("#answer")
        quote = answer.locator(".cite-quote")
        await expect(quote).to_be_hidden()
        await answer.locator("button.cite", has_text="[1]").click()
        await expect(quote).to_be_visible()
        await expect(quote.locator("q")).to_have_text(QUOTE)  # the markup as text
        await expect(quote.locator("img")).to_have_count(0)
        source = quote.locator("a")
        await expect(source).to_have_attribute("href", PAGE.url)
        await expect(source).to_have_text("France")
        await expect(answer.locator("mark.unsupported")).to_have_text("It has a famous tower.")
        await expect(page.locator("#answer-grounding")).to_contain_text("groundedness 0.50")
        pwned = await page.evaluate("window.pwned")

    assert pwned is None
    assert watch.hosts() == {"127.0.0.1"}
