"""Document collections over HTTP, on the real app served by uvicorn and a real HTTP client, on
SQLite and on Postgres: a collection created, filled by upload (a PDF, Markdown, text), by JSON
text and by URL, listed, read, searched through another store object on the same database, and
deleted; the same content stored once; another key's collection answered 404 on every route;
every bad file refused with its status and code and nothing stored; a collection a running run
lists kept (409)."""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from pypdf import PdfReader, PdfWriter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from agents.result import RunResult
from app.settings import Settings
from app.store.base import Lease, RunRecord
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore
from testkit.pdfs import text_pdf
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker
from tests.support.server import serving

TREE = Scenario(plan=["A"])
ALICE, BOB = "alice-secret-51c7", "bob-secret-9a0e"
KEYS = {"api_keys": [SecretStr(f"alice:{ALICE}"), SecretStr(f"bob:{BOB}")]}
PDF = text_pdf(
    [["The heron nests in reed beds."], ["Cranes migrate south in autumn."]], title="Birds"
)
MARKDOWN = b"# Rivers\n\nThe Danube flows into the Black Sea.\n\n## Deltas\n\nSilt builds deltas."
TEXT = b"Glaciers carve valleys over millennia."


def as_(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class Backend:
    """Where the service keeps its store: its settings, and another store object on it."""

    settings: Settings

    @asynccontextmanager
    async def store(self) -> AsyncIterator[RunStore]:
        store: RunStore
        if self.settings.database_url:
            store = await PostgresRunStore.open(self.settings.database_url)
        else:
            store = await SqliteRunStore.open(self.settings.data_dir / "runs.sqlite")
        try:
            yield store
        finally:
            await store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, settings: Settings) -> Backend:
    if request.param == "postgres":
        return Backend(
            settings.model_copy(update={"database_url": request.getfixturevalue("postgres_url")})
        )
    return Backend(settings)


async def create(client: httpx.AsyncClient, name: str = "notes", **kw: Any) -> str:
    made = await client.post("/collections", json={"name": name}, **kw)
    assert made.status_code == 201, made.text
    collection_id: str = made.json()["collection_id"]
    return collection_id


@asynccontextmanager
async def a_collection(
    service_for: ServiceMaker,
    backend: Backend | None = None,
    *,
    key: str | None = None,
    **overrides: Any,
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """The app served with `overrides` (on `backend`'s database when given) and a new collection
    "notes" in it, made with `key` when given: the app's client and the collection's id."""
    if backend is not None:
        overrides["database_url"] = backend.settings.database_url
    async with service_for(TREE, **overrides) as svc:
        yield svc.client, await create(svc.client, headers=as_(key) if key else None)


def upload(*files: tuple[str, bytes]) -> dict[str, Any]:
    return {"files": [("file", (name, data)) for name, data in files]}


async def test_a_collection_is_filled_read_searched_and_deleted(
    service_for: ServiceMaker, backend: Backend
) -> None:
    async with a_collection(service_for, backend) as (client, collection_id):
        added = await client.post(
            f"/collections/{collection_id}/documents",
            **upload(("birds.pdf", PDF), ("rivers.md", MARKDOWN), ("ice.txt", TEXT)),
        )
        listed = (await client.get("/collections")).json()
        detail = (await client.get(f"/collections/{collection_id}")).json()
        docs = {d["name"]: d for d in added.json()["documents"]}
        one = await client.get(
            f"/collections/{collection_id}/documents/{docs['birds.pdf']['document_id']}"
        )
        birds = f"/collections/{collection_id}/documents/{docs['birds.pdf']['document_id']}"
        rivers = f"/collections/{collection_id}/documents/{docs['rivers.md']['document_id']}"
        page_two = await client.get(f"{birds}/pages/2")
        no_page = await client.get(f"{birds}/pages/3")
        unpaged = await client.get(f"{rivers}/pages/1")
        async with backend.store() as store:
            found = await store.collections.search(None, [collection_id], "cranes autumn", 5)
        gone_doc = await client.delete(
            f"/collections/{collection_id}/documents/{docs['rivers.md']['document_id']}"
        )
        async with backend.store() as store:
            after_doc = await store.collections.search(None, [collection_id], "Danube", 5)
        gone = await client.delete(f"/collections/{collection_id}")
        missing = await client.get(f"/collections/{collection_id}")
        async with backend.store() as store:
            after = await store.collections.search(None, [collection_id], "cranes", 5)

    assert added.status_code == 201
    assert [d["created"] for d in added.json()["documents"]] == [True, True, True]
    assert (docs["birds.pdf"]["kind"], docs["birds.pdf"]["title"], docs["birds.pdf"]["pages"]) == (
        "pdf",
        "Birds",
        2,
    )
    assert (docs["rivers.md"]["kind"], docs["rivers.md"]["passages"]) == ("markdown", 2)
    assert docs["ice.txt"]["kind"] == "text"
    assert [(c["name"], c["document_count"]) for c in listed["collections"]] == [("notes", 3)]
    assert sorted(d["name"] for d in detail["documents"]) == ["birds.pdf", "ice.txt", "rivers.md"]
    assert {d["status"] for d in detail["documents"]} == {"indexed"}
    assert detail["bytes"] == len(PDF) + len(MARKDOWN) + len(TEXT)
    assert one.json()["document_id"] == docs["birds.pdf"]["document_id"]
    assert [(h.title, h.page) for h in found] == [("Birds", 2)]
    # A page's passages, as stored and searched: what a citation "Birds, p. 2" quotes from.
    assert page_two.status_code == 200
    assert [p["text"] for p in page_two.json()["passages"]] == [found[0].text]
    assert (no_page.status_code, no_page.json()["code"]) == (404, "page_not_found")
    assert len(unpaged.json()["passages"]) == docs["rivers.md"]["passages"]
    assert found[0].text == "Cranes migrate south in autumn."
    assert gone_doc.status_code == 204
    assert after_doc == []
    assert gone.status_code == 204
    assert missing.status_code == 404
    assert missing.json()["code"] == "collection_not_found"
    assert after == []


async def test_the_same_content_again_answers_200_with_the_stored_document(
    service_for: ServiceMaker, backend: Backend
) -> None:
    async with a_collection(service_for, backend) as (client, collection_id):
        path = f"/collections/{collection_id}/documents"
        first = await client.post(path, **upload(("rivers.md", MARKDOWN)))
        again = await client.post(path, **upload(("copy of rivers.md", MARKDOWN)))
        detail = (await client.get(f"/collections/{collection_id}")).json()

    assert first.status_code == 201
    assert again.status_code == 200
    stored, given = first.json()["documents"][0], again.json()["documents"][0]
    assert given["created"] is False
    assert given["document_id"] == stored["document_id"]
    assert given["name"] == "rivers.md"
    assert [d["document_id"] for d in detail["documents"]] == [stored["document_id"]]


async def test_text_given_as_json_is_stored_as_markdown_under_its_title(
    service_for: ServiceMaker, backend: Backend
) -> None:
    body = {"title": "Field notes / 2025", "text": "# Owls\n\nOwls hunt at dusk."}
    async with a_collection(service_for, backend) as (client, collection_id):
        added = await client.post(f"/collections/{collection_id}/documents", json=body)
        async with backend.store() as store:
            found = await store.collections.search(None, [collection_id], "owls dusk", 5)

    document = added.json()["documents"][0]
    assert added.status_code == 201
    assert added.headers["location"] == (
        f"/collections/{collection_id}/documents/{document['document_id']}"
    )
    assert (document["title"], document["name"], document["kind"]) == (
        "Field notes / 2025",
        "Field notes - 2025.md",
        "markdown",
    )
    assert [(h.title, h.text) for h in found] == [("Field notes / 2025", "Owls hunt at dusk.")]


async def test_another_key_gets_404_on_every_route_and_changes_nothing(
    service_for: ServiceMaker, backend: Backend
) -> None:
    async with a_collection(service_for, backend, **KEYS, key=ALICE) as (client, collection_id):
        path = f"/collections/{collection_id}"
        added = await client.post(
            f"{path}/documents", **upload(("rivers.md", MARKDOWN)), headers=as_(ALICE)
        )
        doc = f"{path}/documents/{added.json()['documents'][0]['document_id']}"
        by_bob = {
            "get": await client.get(path, headers=as_(BOB)),
            "upload": await client.post(
                f"{path}/documents", **upload(("ice.txt", TEXT)), headers=as_(BOB)
            ),
            "text": await client.post(
                f"{path}/documents", json={"title": "t", "text": "x"}, headers=as_(BOB)
            ),
            "get document": await client.get(doc, headers=as_(BOB)),
            "get page": await client.get(f"{doc}/pages/1", headers=as_(BOB)),
            "delete document": await client.delete(doc, headers=as_(BOB)),
            "delete": await client.delete(path, headers=as_(BOB)),
        }
        bobs_list = (await client.get("/collections", headers=as_(BOB))).json()
        alices = (await client.get(path, headers=as_(ALICE))).json()
        async with backend.store() as store:
            found = await store.collections.search("alice", [collection_id], "Danube", 5)
            by_bob_search = await store.collections.search("bob", [collection_id], "Danube", 5)

    assert {name: r.status_code for name, r in by_bob.items()} == dict.fromkeys(by_bob, 404)
    assert {r.json()["code"] for r in by_bob.values()} == {"collection_not_found"}
    assert bobs_list["collections"] == []
    assert (alices["document_count"], alices["bytes"]) == (1, len(MARKDOWN))
    assert len(found) == 1
    assert by_bob_search == []


def _zip() -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("word/document.xml", "<w:document>not a pdf</w:document>")
    return out.getvalue()


def _encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(PDF)))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def raw_multipart(filename: bytes, data: bytes) -> dict[str, Any]:
    """A one-file multipart body written byte by byte: an HTTP client would escape a control
    character in the name, and the server must refuse the name a client does send."""
    boundary = b"lats-test-boundary-7f3a"
    body = (
        b"--" + boundary + b"\r\n"
        b'Content-Disposition: form-data; name="file"; filename="' + filename + b'"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
        b"--" + boundary + b"--\r\n"
    )
    content_type = f"multipart/form-data; boundary={boundary.decode()}"
    return {"content": body, "headers": {"Content-Type": content_type}}


MAX_BYTES = 4 * 1024 * 1024
BAD_INPUTS: dict[str, tuple[dict[str, Any], int, str]] = {
    "over the size limit": (upload(("big.txt", b"a" * (MAX_BYTES + 1))), 413, "too_large"),
    "an unknown type": (upload(("sheet.xyz", b"a,b\n1,2\n")), 422, "unsupported_type"),
    "a corrupt PDF": (upload(("paper.pdf", b"%PDF-1.7\n1 0 obj <<\nbroken")), 422, "corrupt"),
    "an encrypted PDF": (upload(("locked.pdf", _encrypted_pdf())), 422, "encrypted"),
    "a PDF of 10,000 pages": (upload(("long.pdf", text_pdf([[]] * 10_000))), 422, "too_many_pages"),
    "an HTML bomb, deep": (upload(("deep.html", b"<div>" * 100_000)), 422, "too_complex"),
    "an HTML bomb, wide": (upload(("wide.html", b"<br>" * 250_000)), 422, "too_complex"),
    "a zip disguised as a PDF": (upload(("paper.pdf", _zip())), 422, "corrupt"),
    "an empty file": (upload(("empty.txt", b"")), 422, "empty"),
    "a name with a path": (upload(("../../etc/passwd.txt", TEXT)), 422, "bad_name"),
    "a name with a folder": (upload(("notes/ice.txt", TEXT)), 422, "bad_name"),
    "a name with a control character": (raw_multipart(b"bell\x07.txt", TEXT), 422, "bad_name"),
    "a name with a bidi override": (
        raw_multipart("txt.\u202eexe.md".encode(), TEXT),
        422,
        "bad_name",
    ),
    "a bad file after a good one": (upload(("ice.txt", TEXT), ("empty.txt", b"")), 422, "empty"),
    "a part that is not a file": (
        {"data": {"title": "x"}, "files": [("file", ("ice.txt", TEXT))]},
        422,
        "bad_upload",
    ),
    "no file at all": (
        {"content": b"--b--\r\n", "headers": {"Content-Type": "multipart/form-data; boundary=b"}},
        422,
        "bad_upload",
    ),
    "a JSON body that is neither": ({"json": {"name": "x"}}, 422, "invalid_request"),
    "another media type": (
        {"content": TEXT, "headers": {"Content-Type": "text/plain"}},
        415,
        "unsupported_media_type",
    ),
}


async def test_every_bad_input_is_refused_with_its_code_and_nothing_is_stored(
    service_for: ServiceMaker, backend: Backend
) -> None:
    async with a_collection(service_for, backend, document_max_bytes=MAX_BYTES) as (
        client,
        collection_id,
    ):
        path = f"/collections/{collection_id}/documents"
        answers = {
            case: await client.post(path, **request) for case, (request, _, _) in BAD_INPUTS.items()
        }
        detail = (await client.get(f"/collections/{collection_id}")).json()
        async with backend.store() as store:
            found = await store.collections.search(None, [collection_id], "Glaciers valleys", 5)

    got = {case: (r.status_code, r.json()["code"]) for case, r in answers.items()}
    assert got == {case: (status, code) for case, (_, status, code) in BAD_INPUTS.items()}
    for case, response in answers.items():
        message = response.json()["message"]
        assert message, case
        assert "Traceback" not in message, case
    assert (detail["document_count"], detail["bytes"], detail["documents"]) == (0, 0, [])
    assert found == []


async def test_a_collection_an_unfinished_run_lists_is_kept_until_the_run_ends(
    service_for: ServiceMaker, backend: Backend
) -> None:
    async with a_collection(service_for, backend) as (client, collection_id):
        await client.post(
            f"/collections/{collection_id}/documents", **upload(("rivers.md", MARKDOWN))
        )
        now = datetime.now(UTC)
        run = RunRecord(
            id=uuid.uuid4().hex,
            task="t",
            params={"collections": [collection_id]},
            status="running",
            created_at=now,
            updated_at=now,
        )
        async with backend.store() as store:
            # Held by another worker, so the service's own worker leaves it alone.
            await store.runs.create(run, started="{}", lease=Lease("elsewhere", 60))
        refused = await client.delete(f"/collections/{collection_id}")
        kept = (await client.get(f"/collections/{collection_id}")).json()
        async with backend.store() as store:
            await store.events.finish(
                run.id, "elsewhere", "done", "{}", RunResult(run_id=run.id, status="done")
            )
        deleted = await client.delete(f"/collections/{collection_id}")

    assert refused.status_code == 409
    assert refused.json()["code"] == "collection_in_use"
    assert kept["document_count"] == 1
    assert deleted.status_code == 204


async def test_a_document_over_the_keys_total_is_refused_and_not_stored(
    service_for: ServiceMaker, backend: Backend
) -> None:
    limit = len(MARKDOWN) + len(TEXT) // 2
    async with a_collection(service_for, backend, document_key_max_bytes=limit) as (
        client,
        collection_id,
    ):
        path = f"/collections/{collection_id}/documents"
        first = await client.post(path, **upload(("rivers.md", MARKDOWN)))
        over = await client.post(path, **upload(("ice.txt", TEXT)))
        detail = (await client.get(f"/collections/{collection_id}")).json()

    assert first.status_code == 201
    assert (over.status_code, over.json()["code"]) == (413, "quota_exceeded")
    assert [d["name"] for d in detail["documents"]] == ["rivers.md"]


async def test_a_file_over_the_limit_in_a_streamed_upload_is_refused_with_the_limit(
    service_for: ServiceMaker,
) -> None:
    """A body without a length (chunked), far over the limit: refused by the file's bound,
    with its name, not by the body's. (That the server stops reading at the bound is
    tests/unit/collections/test_uploads.py's.)"""
    boundary = "lats-stream-boundary"

    async def body() -> AsyncIterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"'
            "\r\n\r\n"
        ).encode()
        for _ in range(256):  # 16 MiB
            yield b"a" * 65536
        yield f"\r\n--{boundary}--\r\n".encode()

    async with a_collection(service_for, document_max_bytes=MAX_BYTES) as (client, collection_id):
        refused = await client.post(
            f"/collections/{collection_id}/documents",
            content=body(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        detail = (await client.get(f"/collections/{collection_id}")).json()

    assert (refused.status_code, refused.json()["code"]) == (413, "too_large")
    assert "'big.txt' is over the limit of 4,194,304 bytes" in refused.json()["message"]
    assert detail["document_count"] == 0


async def test_a_file_whose_reading_takes_too_long_is_refused(
    service_for: ServiceMaker,
) -> None:
    long_pdf = text_pdf([[f"Page {n}."] for n in range(10_000)])
    async with a_collection(
        service_for, document_read_timeout_s=1.0, document_max_pages=100_000
    ) as (client, collection_id):
        refused = await client.post(
            f"/collections/{collection_id}/documents", **upload(("long.pdf", long_pdf))
        )
        detail = (await client.get(f"/collections/{collection_id}")).json()

    assert (refused.status_code, refused.json()["code"]) == (422, "too_slow")
    assert detail["document_count"] == 0


def _content_bomb(operations: int) -> bytes:
    """A PDF of a few kilobytes whose one page's compressed content holds `operations` text
    operators: reading it builds an object per operator."""
    import zlib

    content = zlib.compress(b"BT /F1 11 Tf 72 760 Td " + b"(a) Tj " * operations + b"ET", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode()
        + content
        + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    start = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{start}\n%%EOF\n".encode()
    )
    return bytes(out)


async def test_a_pdf_whose_reading_needs_too_much_memory_is_refused(
    service_for: ServiceMaker,
) -> None:
    bomb = _content_bomb(1_000_000)
    # Time enough for a loaded machine: the refusal must come from the memory cap, not a clock.
    async with a_collection(
        service_for, document_read_memory_mb=256, document_read_timeout_s=300
    ) as (client, collection_id):
        refused = await client.post(
            f"/collections/{collection_id}/documents", **upload(("small.pdf", bomb)), timeout=300
        )
        health = await client.get("/healthz")

    assert len(bomb) < 16 * 1024
    assert (refused.status_code, refused.json()["code"]) == (422, "too_complex")
    assert health.status_code == 200


@pytest.fixture
async def web() -> AsyncIterator[str]:
    """A web server on loopback: a Markdown file, a redirect to it, an HTML page."""

    async def markdown(request: Request) -> Response:
        return PlainTextResponse("# Comets\n\nComets have tails.", media_type="text/markdown")

    async def moved(request: Request) -> Response:
        return RedirectResponse("/files/comets.md", status_code=302)

    async def missing(request: Request) -> Response:
        return PlainTextResponse("gone", status_code=404)

    app = Starlette(
        routes=[
            Route("/files/comets.md", markdown),
            Route("/moved", moved),
            Route("/missing", missing),
        ]
    )
    async with serving(app) as url:
        yield url


async def test_a_url_is_fetched_only_where_the_operator_allows_it(
    service_for: ServiceMaker, web: str
) -> None:
    body = {"url": f"{web}/moved"}
    async with service_for(TREE) as off:
        off_id = await create(off.client)
        refused_off = await off.client.post(f"/collections/{off_id}/documents", json=body)
    async with service_for(TREE, document_urls=True) as public_only:
        public_id = await create(public_only.client, "fetched")
        refused_private = await public_only.client.post(
            f"/collections/{public_id}/documents", json=body
        )

    assert (refused_off.status_code, refused_off.json()["code"]) == (422, "url_refused")
    assert "LATS_DOCUMENT_URLS" in refused_off.json()["message"]
    assert (refused_private.status_code, refused_private.json()["code"]) == (422, "url_refused")
    assert "loopback, link-local or private" in refused_private.json()["message"]


async def test_an_allowed_url_is_fetched_through_its_redirects_and_stored(
    service_for: ServiceMaker, web: str
) -> None:
    async with a_collection(service_for, document_urls=True, document_url_allow_private=True) as (
        client,
        collection_id,
    ):
        path = f"/collections/{collection_id}/documents"
        added = await client.post(path, json={"url": f"{web}/moved"})
        failed = await client.post(path, json={"url": f"{web}/missing"})

    document = added.json()["documents"][0]
    assert added.status_code == 201
    assert (document["name"], document["kind"], document["title"]) == (
        "comets.md",
        "markdown",
        "comets",
    )
    assert (failed.status_code, failed.json()["code"]) == (422, "url_failed")
    assert "404" in failed.json()["message"]
