"""A document upload cut short by a SIGKILL of the server (a real `python -m app serve` process,
real HTTP), on SQLite and on Postgres: killed while the upload streams in, or once it has
arrived and is being read and stored. After a restart the store holds nothing of that document
(no document, no passage), and the same upload then goes through whole."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.collections.local_folder import FOLDER_TENANT
from testkit.process import ServerProcess, shared_runs_env
from testkit.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

BOUNDARY = "lats-kill-boundary"
CHUNK = 256 * 1024
SLOW_S = 0.05  # between chunks once the upload is half sent: time to kill it mid-way


def big_markdown() -> bytes:
    """About 18 MiB of Markdown: sections of paragraphs, some 16,000 passages (under the
    store's 20,000 a document)."""
    section = "".join(
        f"Paragraph {n}: zebrafish regenerate their fins, and the heart muscle regrows too. " * 7
        + "\n\n"
        for n in range(40)
    )
    parts = [f"# Section {s}\n\n{section}" for s in range(800)]
    return "".join(parts).encode()


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    env = shared_runs_env(tmp_path)
    if request.param == "postgres":
        env["LATS_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    return env


def stored_rows(env: dict[str, str]) -> tuple[int, int]:
    """(documents, passages) of the callers' collections in the server's store, counted in its
    database directly (the deployment's `local_docs` folder, loaded at start-up, aside)."""
    url = env.get("LATS_DATABASE_URL")
    if url:
        with psycopg.connect(url) as conn:
            return _counted(conn.execute, "lats_", "IS DISTINCT FROM")
    db = sqlite3.connect(Path(env["LATS_DATA_DIR"]) / "runs.sqlite")
    try:
        return _counted(db.execute, "", "IS NOT")
    finally:
        db.close()


def _counted(execute: Any, prefix: str, not_same: str) -> tuple[int, int]:
    callers = f"SELECT id FROM {prefix}collections WHERE tenant {not_same} '{FOLDER_TENANT}'"
    documents = execute(
        f"SELECT COUNT(*) FROM {prefix}documents WHERE collection_id IN ({callers})"
    ).fetchone()
    passages = execute(
        f"SELECT COUNT(*) FROM {prefix}passages WHERE collection_id IN ({callers})"
    ).fetchone()
    return (documents[0] if documents else -1, passages[0] if passages else -1)


class SlowUpload:
    """A multipart upload of `data` sent from a thread, slowed once half of it is sent;
    `half_sent` and `all_sent` say how far it got."""

    def __init__(self, url: str, data: bytes) -> None:
        self.url = url
        self.data = data
        self.half_sent = threading.Event()
        self.all_sent = threading.Event()
        self.thread = threading.Thread(target=self._send, daemon=True)

    def _body(self) -> Iterator[bytes]:
        yield (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="fins.md"'
            "\r\n\r\n"
        ).encode()
        for start in range(0, len(self.data), CHUNK):
            yield self.data[start : start + CHUNK]
            if start >= len(self.data) // 2:
                self.half_sent.set()
        yield f"\r\n--{BOUNDARY}--\r\n".encode()
        self.all_sent.set()

    def _slowed(self) -> Iterator[bytes]:
        for chunk in self._body():
            yield chunk
            if self.half_sent.is_set() and not self.all_sent.is_set():
                time.sleep(SLOW_S)

    def _send(self) -> None:
        try:
            httpx.post(
                self.url,
                content=self._slowed(),
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
                timeout=120,
            )
        except httpx.HTTPError:
            return  # the server was killed: the answer never comes

    def start(self) -> SlowUpload:
        self.thread.start()
        return self


def _killed_upload(
    env: dict[str, str], procs: list[ServerProcess], data: bytes, *, when: str
) -> str:
    """Start a server, make a collection, start the upload, SIGKILL the server at `when`
    (`half_sent` or `all_sent`); the collection's id."""
    server = ServerProcess(env).start()
    procs.append(server)
    collection_id: str = httpx.post(
        f"{server.url}/collections", json={"name": "fish"}, timeout=30
    ).json()["collection_id"]
    upload = SlowUpload(f"{server.url}/collections/{collection_id}/documents", data).start()
    wait_for(getattr(upload, when).is_set, f"the upload to be {when.replace('_', ' ')}")
    server.kill()
    upload.thread.join(30)
    return collection_id


@pytest.mark.parametrize("when", ["half_sent", "all_sent"])
def test_an_upload_killed_mid_way_leaves_nothing_of_its_document(
    env: dict[str, str], procs: list[ServerProcess], when: str
) -> None:
    data = big_markdown()
    collection_id = _killed_upload(env, procs, data, when=when)
    left = stored_rows(env)
    restarted = ServerProcess(env).start()
    procs.append(restarted)
    with httpx.Client(base_url=restarted.url, timeout=120) as client:
        after_restart = client.get(f"/collections/{collection_id}").json()
        again = client.post(
            f"/collections/{collection_id}/documents",
            files={"file": ("fins.md", data, "text/markdown")},
        )
    stored = stored_rows(env)

    assert 16 * 1024 * 1024 < len(data) < 25 * 1024 * 1024
    assert left == (0, 0)
    assert (after_restart["document_count"], after_restart["documents"]) == (0, [])
    assert again.status_code == 201
    document = again.json()["documents"][0]
    assert document["created"] is True
    assert stored == (1, document["passages"])
    assert document["passages"] > 10_000
