"""A run over an uploaded PDF end to end: the server as a real process, its models the real
Gemini client against the simulator. A collection is made and a two-page PDF uploaded through
the HTTP API; a run that names the collection searches it with the `documents` tool, and its
answer's verified citation names the document's title and page, its quote in that page's
text."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from testkit.events import read_events
from testkit.gemini_roles import fake_call, to_sim_reply
from testkit.gemini_sim import Call, SimRequest
from testkit.gemini_sim import Reply as SimReply
from testkit.pdfs import text_pdf
from testkit.process import ServerProcess
from testkit.scenario import Scenario
from tests.support.sim_env import sim_server

PAGES = [
    ["Annual report of the Example Company.", "Chapter one covers the people."],
    ["Revenue grew to 12 million euros in 2025.", "Costs stayed level."],
]
QUOTE = "Revenue grew to 12 million euros"
PLAN = Scenario(plan=["Find the revenue"])
ANSWER = {
    "answer": "12 million euros.[1]",
    "citations": [{"marker": 1, "evidence_id": "E1", "quote": QUOTE}],
}


def reading(request: SimRequest) -> SimReply:
    call = fake_call(request)
    if call.role == "executor" and request.tool_names and not request.function_responses:
        assert "documents" in request.tool_names
        return Call("documents", {"query": "revenue 2025"})
    if call.role == "responder":
        return to_sim_reply(ANSWER)
    return to_sim_reply(PLAN.reply(call))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with sim_server(reading, tmp_path_factory.mktemp("documents")) as process:
        yield process


def test_a_run_over_an_uploaded_pdf_cites_its_title_and_page(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        collection = client.post("/collections", json={"name": "reports"}).json()
        pdf = text_pdf(PAGES, title="Annual report")
        upload = client.post(
            f"/collections/{collection['collection_id']}/documents",
            files={"file": ("report.pdf", pdf, "application/pdf")},
        )
        assert upload.status_code == 201, upload.text
        [document] = upload.json()["documents"]
        body = {
            "task": "What was the revenue in 2025?",
            "max_paths": 1,
            "max_candidates": 1,
            "collections": [collection["collection_id"]],
        }
        run_id = client.post("/runs", json=body).json()["run_id"]
        events = read_events(server.url, run_id)
        run = client.get(f"/runs/{run_id}").json()

    _, last, done = events[-1]
    assert last == "done", done
    assert (document["pages"], document["kind"]) == (2, "pdf")
    [citation] = run["citations"]
    assert citation["verified"] is True
    assert citation["source"]["title"] == "Annual report, p. 2"
    url = f"/collections/{collection['collection_id']}/documents/{document['document_id']}#page=2"
    assert citation["source"]["url"] == url
    # Every verified quote is in the text of the page it names.
    assert citation["quote"] in " ".join(PAGES[1])
    assert citation["quote"] not in " ".join(PAGES[0])
    assert done["citations"] == run["citations"]
    assert run["groundedness"] == 1.0
