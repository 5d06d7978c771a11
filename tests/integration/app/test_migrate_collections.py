"""`lats migrate` with document collections: SQLite to Postgres and back, each collection with
its documents and passages, equal on both sides and searchable on the target; a copy changed
since is redone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

from app.settings import Settings
from app.store.backend import open_backend
from app.store.collection_base import CollectionRecord
from app.store.migrate import Location, migrate, open_side
from app.store.migrate_units import DocumentCollections, Side
from testkit.pdfs import text_pdf
from tests.support.new_documents import read_file

FILES = {
    "otters.pdf": text_pdf([["# Otters", "Otters use stones."], ["They crack shells."]], "Otters"),
    "herons.md": b"# Herons\n\nHerons wait in the shallows.\n\nThey strike at fish.",
}


@asynccontextmanager
async def _side(where: str | Path, settings: Settings, *, source: bool) -> AsyncIterator[Side]:
    at = Location(url=where) if isinstance(where, str) else Location(path=where)
    async with open_side(at, settings, source=source) as opened:
        yield opened


async def _build(data_dir: Path, settings: Settings) -> None:
    """Two tenants' collections, one of them empty, the other with a PDF and a Markdown file."""
    async with open_backend(settings.model_copy(update={"data_dir": data_dir})) as (store, _):
        now = datetime.now(UTC)
        full = CollectionRecord(id="c-full", tenant="alice", name="birds", created_at=now)
        await store.collections.create(full)
        await store.collections.create(
            CollectionRecord(id="c-empty", tenant=None, name="birds", created_at=now)
        )
        for name, data in FILES.items():
            document = read_file(full.id, name, data, document_id=f"d-{name}", created_at=now)
            await store.collections.add_document("alice", document)


async def _digests(side: Side) -> dict[str, str]:
    kind = DocumentCollections()
    keys = await kind.keys(side, "", 100)
    return {key: unit.digest for key in keys if (unit := await kind.read(side, key))}


async def _hits(side: Side) -> list[tuple[str, int | None]]:
    found = await side.store.collections.search("alice", ["c-full"], "otters crack shells", 5)
    return [(h.passage_id, h.page) for h in found]


async def test_collections_go_to_postgres_and_back_equal_and_searchable(
    tmp_path: Path, settings: Settings, postgres_url: str
) -> None:
    await _build(tmp_path / "source", settings)
    async with _side(tmp_path / "source", settings, source=True) as source:
        expected, searched = await _digests(source), await _hits(source)
        async with _side(postgres_url, settings, source=False) as pg:
            there = await migrate(source, pg)
            on_postgres, found_there = await _digests(pg), await _hits(pg)
    async with (
        _side(postgres_url, settings, source=True) as pg,
        _side(tmp_path / "back", settings, source=False) as back,
    ):
        home = await migrate(pg, back)
        returned, found_back = await _digests(back), await _hits(back)
        held = await back.store.collections.get("alice", "c-full")

    assert there.verified, there.mismatches
    assert home.verified, home.mismatches
    assert there.copied == {"collection": 2} == home.copied
    assert there.source_rows == {"collections": 2, "documents": 2, "passages": 3}
    assert there.target_rows == there.source_rows == home.target_rows
    assert len(expected) == 2
    assert on_postgres == expected == returned
    assert searched[0] == ("d-otters.pdf:p2.1", 2)
    assert found_there == searched == found_back
    assert held is not None
    assert (held.documents, held.bytes) == (2, sum(len(d) for d in FILES.values()))


async def test_a_collection_changed_since_its_copy_is_redone(
    tmp_path: Path, settings: Settings
) -> None:
    await _build(tmp_path / "source", settings)
    async with (
        _side(tmp_path / "source", settings, source=True) as source,
        _side(tmp_path / "t", settings, source=False) as target,
    ):
        await migrate(source, target)
    async with aiosqlite.connect(tmp_path / "t" / "runs.sqlite") as conn:
        await conn.execute("DELETE FROM passages WHERE document_id = 'd-herons.md'")
        await conn.commit()
    async with (
        _side(tmp_path / "source", settings, source=True) as source,
        _side(tmp_path / "t", settings, source=False) as target,
    ):
        gone = await target.store.collections.search("alice", ["c-full"], "herons", 5)
        again = await migrate(source, target)
        back = await target.store.collections.search("alice", ["c-full"], "herons", 5)

    assert gone == []
    assert again.verified, again.mismatches
    assert again.copied == {"collection": 1}
    assert again.skipped == {"collection": 1}
    assert len(back) == 1
