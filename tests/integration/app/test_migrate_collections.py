"""`lats migrate` with document collections: SQLite to Postgres and back, each collection with
its documents and passages, equal on both sides and searchable on the target; a copy changed
since is redone."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import aiosqlite

from app.settings import Settings
from app.store.backend import open_backend
from app.store.collection_base import CollectionRecord
from app.store.migrate import migrate
from app.store.migrate_units import DocumentCollections, Side
from testkit.pdfs import text_pdf
from tests.support.migrate_sides import round_trip, side
from tests.support.new_documents import read_file

FILES = {
    "otters.pdf": text_pdf([["# Otters", "Otters use stones."], ["They crack shells."]], "Otters"),
    "herons.md": b"# Herons\n\nHerons wait in the shallows.\n\nThey strike at fish.",
}


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


class Seen(NamedTuple):
    """What a side holds: its collections' digests by key, what a search of "c-full" finds
    there, and "c-full" as it reads there."""

    digests: dict[str, str]
    hits: list[tuple[str, int | None]]
    full: CollectionRecord | None


async def _seen(side: Side) -> Seen:
    full = await side.store.collections.get("alice", "c-full")
    return Seen(await _digests(side), await _hits(side), full)


async def test_collections_go_to_postgres_and_back_equal_and_searchable(
    tmp_path: Path, settings: Settings, postgres_url: str
) -> None:
    await _build(tmp_path / "source", settings)

    trip = await round_trip(tmp_path, postgres_url, settings, _seen)

    assert trip.there.verified, trip.there.mismatches
    assert trip.home.verified, trip.home.mismatches
    assert trip.there.copied == {"collection": 2} == trip.home.copied
    assert trip.there.source_rows == {"collections": 2, "documents": 2, "passages": 3}
    assert trip.there.target_rows == trip.there.source_rows == trip.home.target_rows
    assert len(trip.source.digests) == 2
    assert trip.postgres.digests == trip.source.digests == trip.back.digests
    assert trip.source.hits[0] == ("d-otters.pdf:p2.1", 2)
    assert trip.postgres.hits == trip.source.hits == trip.back.hits
    held = trip.back.full
    assert held is not None
    assert (held.documents, held.bytes) == (2, sum(len(d) for d in FILES.values()))


async def test_a_collection_changed_since_its_copy_is_redone(
    tmp_path: Path, settings: Settings
) -> None:
    await _build(tmp_path / "source", settings)
    async with (
        side(tmp_path / "source", settings, source=True) as source,
        side(tmp_path / "t", settings, source=False) as target,
    ):
        await migrate(source, target)
    async with aiosqlite.connect(tmp_path / "t" / "runs.sqlite") as conn:
        await conn.execute("DELETE FROM passages WHERE document_id = 'd-herons.md'")
        await conn.commit()
    async with (
        side(tmp_path / "source", settings, source=True) as source,
        side(tmp_path / "t", settings, source=False) as target,
    ):
        gone = await target.store.collections.search("alice", ["c-full"], "herons", 5)
        again = await migrate(source, target)
        back = await target.store.collections.search("alice", ["c-full"], "herons", 5)

    assert gone == []
    assert again.verified, again.mismatches
    assert again.copied == {"collection": 1}
    assert again.skipped == {"collection": 1}
    assert len(back) == 1
