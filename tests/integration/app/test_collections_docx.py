"""A Word document (DOCX) uploaded into a collection over HTTP, on the real app served by
uvicorn (read in the reader's own process, as every upload is): stored as `docx` with its title
and its pages (an explicit page break starts page 2), its passages found by search under their
page, and a page read back; a password-protected one refused with nothing stored."""

from __future__ import annotations

from typing import Any

from app.settings import Settings
from app.store.sqlite.store import SqliteRunStore
from testkit.docx import PAGE_BREAK, docx, paragraph, table
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"])
REPORT = docx(
    paragraph("Wetlands", "Heading1")
    + paragraph("Herons nest in the reed beds of the delta.")
    + PAGE_BREAK
    + paragraph("Migration", "Heading1")
    + paragraph("Cranes leave for the south in autumn.")
    + table([["Species", "Count"], ["Crane", "412"]]),
    title="Bird survey",
)
LOCKED = (
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    + bytes(504)
    + "EncryptedPackage".encode("utf-16-le")
    + bytes(600)
)


def upload(*files: tuple[str, bytes]) -> dict[str, Any]:
    return {"files": [("file", (name, data)) for name, data in files]}


async def test_a_docx_upload_is_searched_and_cited_by_its_page(
    service_for: ServiceMaker, settings: Settings
) -> None:
    async with service_for(TREE) as svc:
        made = await svc.client.post("/collections", json={"name": "surveys"})
        collection_id = made.json()["collection_id"]
        added = await svc.client.post(
            f"/collections/{collection_id}/documents", **upload(("survey.docx", REPORT))
        )
        document = added.json()["documents"][0]
        path = f"/collections/{collection_id}/documents/{document['document_id']}"
        page_two = await svc.client.get(f"{path}/pages/2")
        refused = await svc.client.post(
            f"/collections/{collection_id}/documents", **upload(("locked.docx", LOCKED))
        )
        listed = (await svc.client.get(f"/collections/{collection_id}")).json()
        store = await SqliteRunStore.open(settings.data_dir / "runs.sqlite")
        try:
            found = await store.collections.search(None, [collection_id], "cranes autumn", 5)
        finally:
            await store.close()

    assert added.status_code == 201, added.text
    assert (document["kind"], document["title"], document["pages"]) == ("docx", "Bird survey", 2)
    assert [(hit.title, hit.page) for hit in found] == [("Bird survey", 2)]
    assert "Cranes leave for the south in autumn." in found[0].text
    assert page_two.status_code == 200
    assert [p["text"] for p in page_two.json()["passages"]] == [found[0].text]
    assert (refused.status_code, refused.json()["code"]) == (422, "encrypted")
    assert [d["name"] for d in listed["documents"]] == ["survey.docx"]
