"""The full-text index of collections' passages in the real SQLite file and the real Postgres:
written with a document's passages, merged from the fresh postings without changing what a
search finds, emptied by deletions, and built for the passages of a store written before it
(SQLite's FTS5 table, Postgres's `tsvector` column)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

import app.store.passage_index as passage_index
from app.store.collection_base import CollectionRecord, NewDocument
from app.store.postgres.store import PostgresRunStore
from app.store.protocols import RunStore
from app.store.sqlite.store import SqliteRunStore
from tests.support.new_documents import read_file

_BIRDS = [
    "# Herons\n\nHerons wade in shallow water and spear fish with their bills.",
    "# Kingfishers\n\nKingfishers dive from a perch and catch fish in the river.",
    "# Egrets\n\nEgrets are herons with white plumes, seen wading in marshes.",
    "# Cranes\n\nCranes dance in spring and fly south over the marshes in autumn.",
]
_QUERIES = ["herons fish", "white plumes", "marshes autumn", "river perch dive"]


async def _collection(store: RunStore) -> str:
    record = CollectionRecord(
        id=uuid.uuid4().hex, tenant="alice", name=uuid.uuid4().hex[:8], created_at=datetime.now(UTC)
    )
    await store.collections.create(record)
    return record.id


def _document(collection_id: str, text: str, name: str) -> NewDocument:
    return read_file(collection_id, name, text.encode())


Found = list[list[tuple[str, float]]]


async def _found(store: RunStore, collection_id: str) -> Found:
    """Each query's hits: their text and score (rounded: a merged index sums in its order)."""
    return [
        [
            (h.text, round(h.score, 9))
            for h in await store.collections.search("alice", [collection_id], q, 5)
        ]
        for q in _QUERIES
    ]


async def _found_when_reopened(opening: Awaitable[RunStore], collection_id: str) -> Found:
    """What the queries find in a store opened again (its schema brought up to date)."""
    store = await opening
    try:
        return await _found(store, collection_id)
    finally:
        await store.close()


async def _fill(store: RunStore) -> tuple[str, list[str]]:
    collection = await _collection(store)
    ids = []
    for i, text in enumerate(_BIRDS):
        added = await store.collections.add_document(
            "alice", _document(collection, text, f"b{i}.md")
        )
        ids.append(added.document.id)
    return collection, ids


async def test_merging_the_fresh_postings_changes_no_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite writes postings to the fresh table and merges them once a collection's reach
    `MERGE_AT`: a store that merges after every document finds what one that never does."""
    never = await SqliteRunStore.open(tmp_path / "never.sqlite")
    always = await SqliteRunStore.open(tmp_path / "always.sqlite")
    try:
        kept, _ = await _fill(never)
        monkeypatch.setattr(passage_index, "MERGE_AT", 1)
        merged, _ = await _fill(always)
        expected = await _found(never, kept)
        found = await _found(always, merged)
    finally:
        await never.close()
        await always.close()

    with sqlite3.connect(tmp_path / "always.sqlite") as db:
        fresh = db.execute("SELECT COUNT(*) FROM index_fresh").fetchone()[0]
        postings = db.execute("SELECT COUNT(*) FROM index_postings").fetchone()[0]
    with sqlite3.connect(tmp_path / "never.sqlite") as db:
        unmerged = db.execute("SELECT COUNT(*) FROM index_postings").fetchone()[0]
    assert found == expected
    assert all(hits for hits in found)
    assert fresh == 0
    assert postings > 0
    assert unmerged == 0  # four short documents stay far below the bound


async def test_deleting_every_document_empties_the_index(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passage_index, "MERGE_AT", 20)  # some postings merged, some fresh
    collection, ids = await _fill(store)
    other, _ = await _fill(store)

    for document_id in ids:
        assert await store.collections.delete_document("alice", collection, document_id)
    emptied = await _found(store, collection)
    kept = await _found(store, other)
    counts = await _index_rows(store, collection)
    await store.collections.delete("alice", other)
    gone = await _index_rows(store, other)

    assert emptied == [[], [], [], []]
    assert all(hits for hits in kept)
    assert counts == {"words": 0, "passages": 0, "postings": 0, "orphans": 0, "size": (0, 0)}
    assert gone == {"words": 0, "passages": 0, "postings": 0, "orphans": 0, "size": None}


async def _index_rows(store: RunStore, collection_id: str) -> dict[str, object]:
    """The collection's rows in the index's tables, read through the store's own reads."""
    db = store._db  # type: ignore[attr-defined]
    d = db.dialect
    words = f"SELECT id FROM {d.index_words} WHERE collection_id = ?"
    counts = {
        "words": f"SELECT COUNT(*) AS n FROM {d.index_words} WHERE collection_id = ?",
        "passages": f"SELECT COUNT(*) AS n FROM {d.index_passages} WHERE passage_id IN"
        f" (SELECT id FROM {d.passages} WHERE collection_id = ?)",
        "postings": f"SELECT COUNT(*) AS n FROM {d.index_postings} WHERE word_id IN ({words})",
        # Postings (merged or fresh) of a word or a passage that is gone, in any collection.
        "orphans": " UNION ALL ".join(
            f"SELECT COUNT(*) AS n FROM {table} WHERE"
            f" (word_id NOT IN (SELECT id FROM {d.index_words})"
            f" OR passage_id NOT IN (SELECT id FROM {d.passages}))"
            for table in store.collections._index.tables  # type: ignore[attr-defined]
        ),
    }
    found: dict[str, object] = {}
    for name, sql in counts.items():
        rows = await db.all(sql, (collection_id,) * sql.count("?"))
        found[name] = sum(int(r["n"]) for r in rows)
    size = await db.one(
        f"SELECT passages, length FROM {d.index_sizes} WHERE collection_id = ?", (collection_id,)
    )
    found["size"] = None if size is None else (int(size["passages"]), int(size["length"]))
    return found


async def test_a_sqlite_file_written_with_fts5_is_indexed_when_opened(tmp_path: Path) -> None:
    """A file of the earlier layout: passages without index rows, FTS5's table and the triggers
    that kept it. Opening it drops those and indexes the passages."""
    path = tmp_path / "runs.sqlite"
    store = await SqliteRunStore.open(path)
    collection, _ = await _fill(store)
    expected = await _found(store, collection)
    await store.close()
    with sqlite3.connect(path) as db:
        for table in (
            "index_postings",
            "index_fresh",
            "index_passages",
            "index_words",
            "index_sizes",
        ):
            db.execute(f"DELETE FROM {table}")
        db.execute(
            "CREATE VIRTUAL TABLE passages_fts USING fts5(text, content='passages',"
            " content_rowid='id')"
        )
        db.execute(
            "CREATE TRIGGER passages_indexed AFTER INSERT ON passages BEGIN"
            " INSERT INTO passages_fts (rowid, text) VALUES (new.id, new.text); END"
        )
        db.execute("INSERT INTO passages_fts (passages_fts) VALUES ('rebuild')")

    found = await _found_when_reopened(SqliteRunStore.open(path), collection)

    with sqlite3.connect(path) as db:
        left = db.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE 'passages_fts%' OR type = 'trigger'"
        ).fetchall()
    assert found == expected
    assert left == []


async def test_a_postgres_database_written_with_tsvector_is_indexed_when_opened(
    postgres_url: str,
) -> None:
    """A database of the earlier layout: passages with a generated `tsvector` column and its
    GIN index, no id, no index rows. Opening it drops the column, numbers the passages and
    indexes them."""
    store = await PostgresRunStore.open(postgres_url)
    collection, _ = await _fill(store)
    expected = await _found(store, collection)
    await store.close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        for table in ("postings", "passages", "words", "sizes"):
            db.execute(f"DELETE FROM lats_index_{table}")
        db.execute("ALTER TABLE lats_passages DROP COLUMN id")
        db.execute(
            "ALTER TABLE lats_passages ADD COLUMN tsv tsvector"
            " GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
        )
        db.execute("CREATE INDEX lats_passages_tsv ON lats_passages USING GIN (tsv)")

    found = await _found_when_reopened(PostgresRunStore.open(postgres_url), collection)

    with psycopg.connect(postgres_url, autocommit=True) as db:
        columns = {
            r[0]
            for r in db.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = 'lats_passages'"
            ).fetchall()
        }
    assert found == expected
    assert "tsv" not in columns
    assert "id" in columns
