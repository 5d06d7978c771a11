"""Collections on the real SQLite file and the real Postgres: a tenant's collections and
documents, each document stored whole with its passages or not at all, the same content stored
once, full-text search that finds only the tenant's passages (through any store object on the
database), ranks the passages that hold more of the query's words first and takes any text as
a query, and a collection kept while an unfinished run uses it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents.result import RunResult
from app.store.base import Lease, RunRecord
from app.store.collection_base import (
    CollectionInUse,
    CollectionLimits,
    CollectionNameTaken,
    CollectionNotFound,
    CollectionRecord,
    DocumentRefusedByStore,
    DocumentTooLarge,
    NewDocument,
    QuotaExceeded,
)
from app.store.passage_index import WHOLE
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.db import SEARCHERS
from app.store.sqlite.store import SqliteRunStore
from testkit.pdfs import text_pdf
from tests.support.makers import Opener
from tests.support.new_documents import read_file
from tools.documents.passages import Passage

LimitedOpener = Callable[[CollectionLimits], Awaitable[RunStore]]


@pytest.fixture(params=["sqlite", "postgres"])
async def open_limited(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[LimitedOpener]:
    """Opens a store whose collections are held to the limits given."""
    opened: list[RunStore] = []

    async def make(limits: CollectionLimits) -> RunStore:
        store: RunStore
        if request.param == "sqlite":
            store = await SqliteRunStore.open(tmp_path / "runs.sqlite", collection_limits=limits)
        else:
            url = request.getfixturevalue("postgres_url")
            store = await PostgresRunStore.open(url, collection_limits=limits)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


async def _collection(
    store: RunStore,
    tenant: str | None = "alice",
    name: str | None = None,
    at: datetime | None = None,
) -> CollectionRecord:
    collection = CollectionRecord(
        id=uuid.uuid4().hex,
        tenant=tenant,
        name=name or uuid.uuid4().hex[:8],
        created_at=at or datetime.now(UTC),
    )
    await store.collections.create(collection)
    return collection


def _text(collection_id: str, text: str, name: str = "notes.md") -> NewDocument:
    """A Markdown file as the service reads it and cuts it into passages."""
    return read_file(collection_id, name, text.encode())


def _made(collection_id: str, cut: list[Passage], size: int = 100) -> NewDocument:
    """A document of the passages given, its content named by them."""
    digest = hashlib.sha256(repr(cut).encode()).hexdigest()
    return NewDocument(
        id=uuid.uuid4().hex,
        collection_id=collection_id,
        title="made",
        name="made.txt",
        kind="text",
        sha256=digest,
        bytes=size,
        pages=1,
        created_at=datetime.now(UTC),
        passages=cut,
    )


async def test_a_tenants_collections_are_created_listed_read_and_deleted(store: RunStore) -> None:
    now = datetime.now(UTC)
    made = [
        await _collection(store, "alice", f"c{i}", now + timedelta(seconds=i)) for i in range(3)
    ]
    await _collection(store, "bob", "c0")  # a name is unique per tenant only

    listed = await store.collections.page("alice", limit=10, offset=0)
    second = await store.collections.page("alice", limit=1, offset=1)
    with pytest.raises(CollectionNameTaken):
        await _collection(store, "alice", "c1")
    got = await store.collections.get("alice", made[0].id)
    deleted = await store.collections.delete("alice", made[0].id)
    again = await store.collections.delete("alice", made[0].id)

    assert [c.name for c in listed] == ["c2", "c1", "c0"]
    assert [c.id for c in second] == [made[1].id]
    assert got == made[0]
    assert (got.documents, got.bytes) == (0, 0)
    assert deleted is True
    assert again is False
    assert await store.collections.get("alice", made[0].id) is None
    assert [c.name for c in await store.collections.page("alice", limit=10, offset=0)] == [
        "c2",
        "c1",
    ]


async def test_collections_without_keys_have_unique_names_too(store: RunStore) -> None:
    made = await _collection(store, None, "mine")

    with pytest.raises(CollectionNameTaken):
        await _collection(store, None, "mine")
    assert await store.collections.get(None, made.id) == made
    assert await store.collections.get("alice", made.id) is None


async def test_another_tenant_finds_nothing_of_a_collection(store: RunStore) -> None:
    alices = await _collection(store, "alice")
    added = await store.collections.add_document("alice", _text(alices.id, "Otters use stones."))
    doc_id = added.document.id

    assert await store.collections.get("bob", alices.id) is None
    assert await store.collections.page("bob", limit=10, offset=0) == []
    assert await store.collections.document("bob", alices.id, doc_id) is None
    assert await store.collections.documents("bob", alices.id, limit=10, offset=0) == []
    assert await store.collections.search("bob", [alices.id], "otters stones", 5) == []
    assert await store.collections.delete_document("bob", alices.id, doc_id) is False
    assert await store.collections.delete("bob", alices.id) is False
    with pytest.raises(CollectionNotFound):
        await store.collections.add_document("bob", _text(alices.id, "Bob's words."))
    assert await store.collections.document("alice", alices.id, doc_id) == added.document
    assert len(await store.collections.search("alice", [alices.id], "otters", 5)) == 1


async def test_a_document_is_read_back_with_its_pages_passages_and_status(store: RunStore) -> None:
    collection = await _collection(store)
    data = text_pdf([["# Intro", "Otters use stones."], ["They crack shells open."]], "Otters")
    document = read_file(collection.id, "otters.pdf", data)
    cut = document.passages

    added = await store.collections.add_document("alice", document)
    got = await store.collections.document("alice", collection.id, document.id)
    listed = await store.collections.documents("alice", collection.id, limit=10, offset=0)
    held = await store.collections.get("alice", collection.id)
    hits = await store.collections.search("alice", [collection.id], "crack shells", 5)

    assert added.created is True
    assert got == added.document
    assert got is not None
    assert (got.title, got.kind, got.status) == ("Otters", "pdf", "indexed")
    assert (got.pages, got.passages, got.bytes) == (2, len(cut), len(data))
    assert listed == [got]
    assert held is not None
    assert (held.documents, held.bytes) == (1, len(data))
    assert [(h.passage_id, h.page, h.title) for h in hits] == [(f"{document.id}:p2.1", 2, "Otters")]
    assert hits[0].document_id == document.id
    assert hits[0].text == "They crack shells open."
    assert hits[0].score > 0


async def test_documents_are_listed_newest_first_a_page_at_a_time(store: RunStore) -> None:
    collection = await _collection(store)
    start = datetime.now(UTC)
    made = []
    for n in range(3):
        document = _text(collection.id, f"Note {n} on swifts.", name=f"n{n}.md")
        later = replace(document, created_at=start + timedelta(seconds=n))
        made.append((await store.collections.add_document("alice", later)).document.id)

    every = await store.collections.documents("alice", collection.id, limit=10, offset=0)
    page = await store.collections.documents("alice", collection.id, limit=1, offset=1)

    assert [d.id for d in every] == made[::-1]
    assert [d.id for d in page] == [made[1]]
    assert [d.name for d in every] == ["n2.md", "n1.md", "n0.md"]


async def test_the_same_content_added_twice_is_stored_once(store: RunStore) -> None:
    collection = await _collection(store)
    other = await _collection(store)
    first = await store.collections.add_document("alice", _text(collection.id, "Otters swim."))

    again = await store.collections.add_document(
        "alice", _text(collection.id, "Otters swim.", name="copy.md")
    )
    elsewhere = await store.collections.add_document("alice", _text(other.id, "Otters swim."))
    listed = await store.collections.documents("alice", collection.id, limit=10, offset=0)
    hits = await store.collections.search("alice", [collection.id], "otters", 10)

    assert first.created is True
    assert again.created is False
    assert again.document == first.document
    assert elsewhere.created is True  # once per collection
    assert [d.id for d in listed] == [first.document.id]
    assert len(hits) == 1


async def test_deleting_a_document_removes_every_passage(store: RunStore) -> None:
    collection = await _collection(store)
    text = "\n\n".join(f"# Part {i}\n\nZebras graze on plain {i}." for i in range(30))
    document = _text(collection.id, text)
    added = await store.collections.add_document("alice", document)
    kept = await store.collections.add_document("alice", _text(collection.id, "Lions hunt."))
    found = await store.collections.search("alice", [collection.id], "zebras graze", 100)

    deleted = await store.collections.delete_document("alice", collection.id, added.document.id)
    after = await store.collections.search("alice", [collection.id], "zebras graze plain", 100)
    again = await store.collections.add_document("alice", _text(collection.id, text))

    assert added.document.passages == 30
    assert len(found) == 30
    assert deleted is True
    assert after == []
    assert await store.collections.document("alice", collection.id, added.document.id) is None
    assert len(await store.collections.search("alice", [collection.id], "lions", 5)) == 1
    assert kept.created is True
    assert again.created is True  # nothing of the first is left to be found by its content


async def test_deleting_a_collection_removes_its_documents_and_passages(store: RunStore) -> None:
    collection = await _collection(store)
    other = await _collection(store)
    added = await store.collections.add_document("alice", _text(collection.id, "Zebras graze."))
    await store.collections.add_document("alice", _text(other.id, "Zebras run."))

    deleted = await store.collections.delete("alice", collection.id)

    assert deleted is True
    assert await store.collections.document("alice", collection.id, added.document.id) is None
    assert await store.collections.search("alice", [collection.id, other.id], "zebras", 5) != []
    assert await store.collections.search("alice", [collection.id], "zebras", 5) == []


async def test_a_passage_written_through_one_store_is_found_through_another(
    open_store: Opener,
) -> None:
    writer, reader = await open_store(), await open_store()
    collection = await _collection(writer)

    added = await writer.collections.add_document(
        "alice", _text(collection.id, "Kingfishers dive for fish.")
    )
    hits = await reader.collections.search("alice", [collection.id], "kingfishers", 5)

    assert [h.document_id for h in hits] == [added.document.id]
    assert await reader.collections.get("alice", collection.id) is not None


async def test_a_document_whose_passages_fail_midway_leaves_nothing(store: RunStore) -> None:
    collection = await _collection(store)
    # The third passage has the first's id: its insert fails after two were written.
    cut = [
        Passage(1, 1, None, "Herons wait."),
        Passage(1, 2, None, "Herons strike."),
        Passage(1, 1, None, "Herons fly."),
    ]
    broken = _made(collection.id, cut)

    with pytest.raises(Exception) as failed:  # noqa: PT011  # the database's own error
        await store.collections.add_document("alice", broken)
    fixed = _made(collection.id, cut[:2])
    fixed_added = await store.collections.add_document("alice", fixed)

    assert not isinstance(failed.value, DocumentRefusedByStore)
    assert await store.collections.document("alice", collection.id, broken.id) is None
    assert [
        d.id for d in await store.collections.documents("alice", collection.id, limit=10, offset=0)
    ] == [fixed.id]
    hits = await store.collections.search("alice", [collection.id], "herons", 10)
    assert sorted(h.passage_id for h in hits) == [f"{fixed.id}:p1.1", f"{fixed.id}:p1.2"]
    assert fixed_added.created is True


async def test_a_document_refused_by_its_limits_leaves_nothing(
    open_limited: LimitedOpener,
) -> None:
    limits = CollectionLimits(max_file_bytes=1000, max_tenant_bytes=1500, max_passages=2)
    store = await open_limited(limits)
    collection = await _collection(store)
    three = [Passage(None, n, None, f"Egrets {n}.") for n in (1, 2, 3)]
    nul = [Passage(None, 1, None, "Egrets\x00 nest.")]

    with pytest.raises(DocumentTooLarge):
        await store.collections.add_document("alice", _made(collection.id, three))
    with pytest.raises(DocumentTooLarge):
        await store.collections.add_document("alice", _made(collection.id, three[:1], 1001))
    with pytest.raises(DocumentRefusedByStore):
        await store.collections.add_document("alice", _made(collection.id, nul))
    first = await store.collections.add_document("alice", _made(collection.id, three[:1], 900))
    with pytest.raises(QuotaExceeded):  # 900 + 700 over 1500 for the tenant
        await store.collections.add_document("alice", _made(collection.id, three[1:2], 700))
    others = await store.collections.add_document(
        "bob", _made((await _collection(store, "bob")).id, three[1:2], 700)
    )

    held = await store.collections.get("alice", collection.id)
    hits = await store.collections.search("alice", [collection.id], "egrets nest", 10)
    assert first.created is True
    assert others.created is True
    assert held is not None
    assert (held.documents, held.bytes) == (1, 900)
    assert [h.passage_id for h in hits] == [f"{first.document.id}:p0.1"]


@pytest.mark.parametrize(
    "query",
    [
        'AND OR "',
        '"',
        "NEAR(a b)",
        "text: egrets*",
        "^egrets -herons +x",
        "a' OR 1=1 --",
        "(((",
        "NOT",
        "",
        "the of and",
        "égrets\x00 ünïcode 漢字",
    ],
)
async def test_query_syntax_is_taken_as_words_and_never_errors(store: RunStore, query: str) -> None:
    collection = await _collection(store)
    await store.collections.add_document("alice", _text(collection.id, "Egrets wade."))

    hits = await store.collections.search("alice", [collection.id], query, 5)
    with_word = await store.collections.search("alice", [collection.id], f"egrets {query}", 5)

    assert len(hits) <= 1
    assert len(with_word) == 1


async def test_the_passage_holding_more_of_the_query_words_ranks_first(store: RunStore) -> None:
    collection = await _collection(store)
    text = "\n\n".join(
        [
            "# One\n\nSolar cells convert light into current on rooftops.",
            "# Two\n\nSolar panels made of silicon cells reach high efficiency.",
            "# Three\n\nWind turbines convert moving air into current offshore.",
            "# Four\n\nBatteries store current for evenings and cloudy weeks.",
        ]
    )
    added = await store.collections.add_document("alice", _text(collection.id, text))

    hits = await store.collections.search(
        "alice", [collection.id], "silicon solar panel efficiency", 10
    )

    assert [h.passage_id for h in hits] == [
        f"{added.document.id}:p0.2",
        f"{added.document.id}:p0.1",
    ]
    assert hits[0].score > hits[1].score


async def test_a_common_word_in_more_passages_than_a_search_reads_leaves_the_rare_one_first(
    store: RunStore,
) -> None:
    collection = await _collection(store)
    filler = [Passage(None, n, None, f"Herons wait number {n}.") for n in range(1, WHOLE + 2)]
    rare = Passage(None, WHOLE + 2, None, "Herons wait beside the kingfisher.")
    await store.collections.add_document("alice", _made(collection.id, [*filler, rare]))

    both = await store.collections.search("alice", [collection.id], "kingfisher herons", 3)
    common = await store.collections.search("alice", [collection.id], "herons", 3)

    assert both[0].text == rare.text
    assert len(both) == 3  # the passages holding only the common word fill the rest
    assert both[0].score > both[1].score
    assert len(common) == 3


async def test_a_collection_an_unfinished_run_uses_is_not_deleted(store: RunStore) -> None:
    used = await _collection(store)
    unused = await _collection(store)
    await store.collections.add_document("alice", _text(used.id, "Cranes dance."))
    now = datetime.now(UTC)
    run = RunRecord(
        id=uuid.uuid4().hex,
        task="t",
        params={"collections": [used.id]},
        status="queued",
        created_at=now,
        updated_at=now,
        tenant="alice",
    )
    await store.runs.create(run, started="{}", lease=Lease("w", 60))

    with pytest.raises(CollectionInUse):
        await store.collections.delete("alice", used.id)
    kept = await store.collections.search("alice", [used.id], "cranes", 5)
    other = await store.collections.delete("alice", unused.id)
    await store.events.finish(run.id, "w", "done", "{}", RunResult(run_id=run.id, status="done"))
    deleted = await store.collections.delete("alice", used.id)

    assert len(kept) == 1
    assert other is True
    assert deleted is True
    assert await store.collections.search("alice", [used.id], "cranes", 5) == []


async def test_on_sqlite_searches_have_connections_of_their_own(tmp_path: Path) -> None:
    """While every search connection is busy, the store's other reads still answer, and a
    search waits for a searcher rather than taking the reading connection (no search
    processes: the searches run on the store's connections)."""
    store = await SqliteRunStore.open(tmp_path / "runs.sqlite", search_processes=0)
    try:
        collection = await _collection(store)
        await store.collections.add_document("alice", _text(collection.id, "# Comets\n\nTails."))
        db = store._db
        async with contextlib.AsyncExitStack() as held:
            for _ in range(SEARCHERS):
                await held.enter_async_context(db.searching())
            read = await asyncio.wait_for(store.collections.get("alice", collection.id), 10)
            waiting = asyncio.create_task(
                store.collections.search("alice", [collection.id], "tails", 5)
            )
            await asyncio.sleep(0.2)
            assert not waiting.done()  # no searcher free: the search waits for one
        found = await asyncio.wait_for(waiting, 10)
    finally:
        await store.close()

    assert read is not None
    assert [hit.text for hit in found] == ["Tails."]


async def test_on_sqlite_a_cancelled_search_gives_its_searcher_back(tmp_path: Path) -> None:
    """Searches cancelled while they wait for a searcher or while their steps run in its
    thread: every searcher is lent again, so as many searches as there are searchers, and
    more, still finish."""
    store = await SqliteRunStore.open(tmp_path / "runs.sqlite", search_processes=0)
    try:
        collection = await _collection(store)
        await store.collections.add_document("alice", _text(collection.id, "# Comets\n\nTails."))
        for delay in (0.0, 0.0005, 0.001, 0.002, 0.005) * 4:
            started = asyncio.create_task(
                store.collections.search("alice", [collection.id], "tails", 5)
            )
            await asyncio.sleep(delay)
            started.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await started
        found = await asyncio.wait_for(
            asyncio.gather(
                *(
                    store.collections.search("alice", [collection.id], "tails", 5)
                    for _ in range(SEARCHERS + 2)
                )
            ),
            10,
        )
    finally:
        await store.close()

    assert [[hit.text for hit in hits] for hits in found] == [["Tails."]] * (SEARCHERS + 2)


async def test_on_sqlite_closing_lets_a_search_in_flight_finish(tmp_path: Path) -> None:
    store = await SqliteRunStore.open(tmp_path / "runs.sqlite")
    collection = await _collection(store)
    await store.collections.add_document("alice", _text(collection.id, "# Comets\n\nTails."))
    search = asyncio.create_task(store.collections.search("alice", [collection.id], "tails", 5))
    await asyncio.sleep(0)  # the search has its searcher

    await asyncio.wait_for(store.close(), 10)
    hits = await asyncio.wait_for(search, 10)

    assert [hit.text for hit in hits] == ["Tails."]
    with pytest.raises(sqlite3.ProgrammingError):
        await asyncio.wait_for(store.collections.search("alice", [collection.id], "tails", 5), 10)
