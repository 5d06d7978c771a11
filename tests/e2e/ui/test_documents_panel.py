"""The documents panel and the collection picker in Chromium: a collection created, a PDF
uploaded with its progress and shown indexed, a run started on the collection from the picker
and its citation of the PDF opened on the cited page (also once the document is deleted); each
upload's own result (stored, already there, refused with its code); user-supplied names and
titles shown as text; a collection a running run searches kept (409, shown as a message), then
a document and the collection deleted; with API keys, the upload sends the key as every call
does. The models are scripted (tests/support/server.py), as in the other page tests."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import ConsoleMessage, Dialog, Locator, Page, Request, expect
from pydantic import SecretStr

from testkit.fakes import FakeCall, Reply
from testkit.gate import Gate
from testkit.pdfs import text_pdf
from testkit.scenario import Scenario
from tests.support.browser import BROWSER_TESTS, Watch, open_page, run_id_of
from tests.support.makers import ServiceMaker

pytestmark = BROWSER_TESTS

PAGES = [
    ["Annual report of the Example Company.", "Chapter one covers the people."],
    ["Revenue grew to 12 million euros in 2025.", "Costs stayed level."],
]
QUOTE = "Revenue grew to 12 million euros in 2025"
ANSWER = {
    "answer": "The revenue was 12 million euros.[1]",
    "citations": [{"marker": 1, "evidence_id": "E1", "quote": QUOTE}],
}
SCENARIO = Scenario(
    plan=["Find the revenue"],
    tools={"Find the revenue": ("documents", {"query": "revenue 2025"})},
)
KEY = "documents-key-0123456789"

# Records every state an upload row passes through (uploading, reading, stored, …), so a test
# sees the progress a fast upload shows only for a moment.
RECORD_UPLOAD_STATES = """() => {
  window.uploadStates = [];
  const seen = (row) => window.uploadStates.push(row.dataset.state);
  new MutationObserver((changes) => {
    for (const change of changes) {
      if (change.type === "attributes") seen(change.target);
      for (const added of change.addedNodes ?? []) if (added.dataset?.state) seen(added);
    }
  }).observe(document.getElementById("collection-list"),
    { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
}"""


async def citing(call: FakeCall) -> Reply:
    return ANSWER if call.role == "responder" else SCENARIO.reply(call)


def report_pdf(tmp_path: Path) -> Path:
    path = tmp_path / "report.pdf"
    path.write_bytes(text_pdf(PAGES, title="Annual report"))
    return path


def collection(page: Page, name: str) -> Locator:
    return page.locator(".collection").filter(has=page.locator(".collection-name", has_text=name))


async def create_collection(page: Page, name: str) -> Locator:
    await page.fill("#collection-name", name)
    await page.click("#create-collection")
    item = collection(page, name)
    await expect(item).to_be_visible()
    return item


async def upload(item: Locator, *paths: Path) -> None:
    await item.locator(".upload-input").set_input_files(list(paths))


def console_errors(page: Page) -> list[str]:
    """Every error the page's console reports (script errors, failed requests) as it comes."""
    errors: list[str] = []

    def seen(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", seen)
    return errors


def accept_dialogs(page: Page) -> list[str]:
    """Accept every confirm() the page asks; the questions asked."""
    asked: list[str] = []

    async def accept(dialog: Dialog) -> None:
        asked.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    return asked


async def test_an_uploaded_pdf_is_searched_by_a_run_and_its_citation_opens_the_cited_page(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    watch = Watch(page)
    errors = console_errors(page)
    async with service_for(citing) as svc:
        await open_page(page, svc.url)
        await expect(page.locator("#documents-empty")).to_be_visible()
        await expect(page.locator("#collection-picker")).to_be_hidden()
        reports = await create_collection(page, "Reports")
        await page.evaluate(RECORD_UPLOAD_STATES)
        await upload(reports, report_pdf(tmp_path))

        await expect(reports.locator(".upload-row")).to_have_attribute("data-state", "stored")
        doc = reports.locator(".doc")
        await expect(doc.locator(".doc-status")).to_have_text("indexed")
        await expect(doc.locator(".doc-title")).to_have_text("Annual report")
        await expect(doc.locator(".doc-facts")).to_have_text(
            "report.pdf · pdf · 2 pages · 2 passages"
        )
        states = await page.evaluate("window.uploadStates")

        picker = page.locator("#collection-picker")
        await expect(picker).to_be_visible()
        await picker.get_by_label("Reports").check()
        await page.fill("#task", "What was the Example Company's revenue in 2025?")
        await page.click("#start")
        await expect(page.locator("#run-status")).to_have_text("done")
        run = (await svc.client.get(f"/runs/{run_id_of(page)}")).json()
        collection_id = await reports.get_attribute("data-collection-id")
        document_id = await doc.get_attribute("data-document-id")

        await page.locator("#answer button.cite", has_text="[1]").click()
        source = page.locator("#answer .cite-quote a")
        cited = f"/collections/{collection_id}/documents/{document_id}#page=2"
        await expect(source).to_have_attribute("href", cited)
        await expect(source).to_have_text("Annual report, p. 2")
        await source.click()

        card = page.locator("#doc-card")
        await expect(card).to_be_visible()
        await expect(page.locator("#doc-title")).to_have_text("Annual report, p. 2")
        await expect(page.locator("#doc-facts")).to_contain_text("2 of 2")
        await expect(page.locator("#doc-facts")).to_contain_text("report.pdf")
        await expect(card.locator("#doc-passages li")).to_have_count(1)
        await expect(card.locator("#doc-passages li")).to_contain_text("Costs stayed level.")
        await expect(card.locator("mark.quote")).to_have_text(QUOTE)
        # The page's whole text from the store (GET …/pages/2), not only what the run read.
        await expect(page.locator("#doc-note")).to_contain_text("The whole of page 2")
        address = page.url

    assert "stored" in states
    assert {"uploading", "reading"} & set(states[: states.index("stored")])  # progress was shown
    assert run["params"]["collections"] == [collection_id]  # the picker's choice was sent
    assert address.endswith(f"#/runs/{run['run_id']}")  # the citation opened in the page
    assert watch.hosts() == {"127.0.0.1"}
    assert errors == []


async def test_a_citation_of_a_deleted_document_still_shows_what_the_run_read_of_its_page(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    async with service_for(citing) as svc:
        made = await svc.client.post("/collections", json={"name": "Gone"})
        collection_id = made.json()["collection_id"]
        files = {"file": ("report.pdf", report_pdf(tmp_path).read_bytes(), "application/pdf")}
        added = await svc.client.post(f"/collections/{collection_id}/documents", files=files)
        document_id = added.json()["documents"][0]["document_id"]
        body = {"task": "Revenue?", "collections": [collection_id]}
        run = await svc.client.post("/solve", json=body, headers={"Accept": "application/json"})
        deleted = await svc.client.delete(f"/collections/{collection_id}/documents/{document_id}")
        await open_page(page, f"{svc.url}/#/runs/{run.json()['run_id']}")
        await expect(page.locator("#run-status")).to_have_text("done")
        await page.locator("#answer button.cite", has_text="[1]").click()
        await page.locator("#answer .cite-quote a").click()

        await expect(page.locator("#doc-error")).to_contain_text("no longer in its collection")
        await expect(page.locator("#doc-title")).to_have_text("Document, p. 2")
        await expect(page.locator("#doc-passages mark.quote")).to_have_text(QUOTE)
        await page.click("#doc-close")
        await expect(page.locator("#doc-card")).to_be_hidden()

    assert added.status_code == 201
    assert deleted.status_code == 204


async def test_each_upload_shows_its_own_result_stored_already_there_or_refused_with_its_code(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe heron nests in reed beds.\n")
    again = tmp_path / "copy.md"
    again.write_text(notes.read_text())
    big = tmp_path / "big.txt"
    big.write_text("Too long a line. " * 200_000)  # 3.4 MB: refused while it streams in
    async with service_for(SCENARIO, document_max_bytes=64 * 1024) as svc:
        await open_page(page, svc.url)
        item = await create_collection(page, "Notes")
        await upload(item, notes, empty, again, big)

        rows = item.locator(".upload-row")
        await expect(rows).to_have_count(4)
        # The newest upload first: each file went in a request of its own.
        await expect(rows.nth(0)).to_have_attribute("data-state", "refused")
        await expect(rows.nth(0)).to_contain_text("big.txt")
        await expect(rows.nth(0)).to_contain_text("(too_large)")
        rows = rows.filter(has_not_text="big.txt")
        await expect(rows.nth(0)).to_have_attribute("data-state", "duplicate")
        await expect(rows.nth(0)).to_contain_text("copy.md")
        await expect(rows.nth(0)).to_contain_text("already there as “notes”")
        await expect(rows.nth(1)).to_have_attribute("data-state", "refused")
        await expect(rows.nth(1)).to_contain_text("(empty)")
        await expect(rows.nth(2)).to_have_attribute("data-state", "stored")
        await expect(item.locator(".doc")).to_have_count(1)
        listed = (await svc.client.get("/collections")).json()["collections"]

    assert [c["document_count"] for c in listed] == [1]


async def test_a_hostile_document_title_and_collection_name_are_shown_as_text(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    hostile = '<img src=x onerror="window.pwned=1"><b>bold</b>'
    pdf = tmp_path / "hostile.pdf"
    pdf.write_bytes(text_pdf(PAGES, title=hostile))
    async with service_for(SCENARIO) as svc:
        await open_page(page, svc.url)
        item = await create_collection(page, hostile)
        await upload(item, pdf)

        await expect(item.locator(".doc-title")).to_have_text(hostile)
        await expect(page.locator("#picker-list label")).to_have_text(hostile)
        tags = await page.locator("#documents, #collection-picker").evaluate_all(
            "parts => parts.flatMap(p => [...p.querySelectorAll('img, b')].map(e => e.tagName))"
        )
        pwned = await page.evaluate("window.pwned")

    assert tags == []
    assert pwned is None


async def test_a_collection_a_running_run_searches_is_kept_then_a_document_and_it_are_deleted(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    gate = Gate(Scenario(plan=["Read"]), "Read")
    asked = accept_dialogs(page)
    async with service_for(gate) as svc:
        await open_page(page, svc.url)
        item = await create_collection(page, "Held")
        await upload(item, report_pdf(tmp_path))
        await expect(item.locator(".doc-status")).to_have_text("indexed")
        await page.locator("#collection-picker").get_by_label("Held").check()
        await page.fill("#task", "Hold the run")
        await page.click("#start")
        await gate.reached()

        await item.locator(".delete-collection").click()
        error = item.locator(".error")
        await expect(error).to_be_visible()
        await expect(error).to_contain_text("(collection_in_use)")
        await expect(item).to_be_visible()

        gate.release.set()
        await expect(page.locator("#run-status")).to_have_text("done")
        await item.locator(".delete-document").click()
        await expect(item.locator(".doc")).to_have_count(0)
        await item.locator(".delete-collection").click()
        await expect(collection(page, "Held")).to_have_count(0)
        await expect(page.locator("#documents-empty")).to_be_visible()
        await expect(page.locator("#collection-picker")).to_be_hidden()
        left = (await svc.client.get("/collections")).json()["collections"]

    assert left == []
    assert len(asked) == 3  # each deletion asked first, naming what it deletes
    assert all("Held" in question for question in asked)


async def test_with_api_keys_an_upload_sends_the_key_as_a_header_like_every_call(
    page: Page, service_for: ServiceMaker, tmp_path: Path
) -> None:
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request))
    async with service_for(SCENARIO, api_keys=[SecretStr(KEY)]) as svc:
        await page.goto(svc.url)
        await expect(page.locator("#key-dialog")).to_be_visible()
        await page.fill("#key-input", KEY)
        await page.press("#key-input", "Enter")
        await expect(page.locator("body")).to_have_attribute("data-ready", "true")
        item = await create_collection(page, "Keyed")
        await upload(item, report_pdf(tmp_path))
        await expect(item.locator(".doc-status")).to_have_text("indexed")

    uploads = [r for r in requests if r.method == "POST" and r.url.endswith("/documents")]
    assert len(uploads) == 1
    assert uploads[0].resource_type == "xhr"
    assert (await uploads[0].all_headers()).get("authorization") == f"Bearer {KEY}"
    assert not [r.url for r in requests if KEY in r.url]
