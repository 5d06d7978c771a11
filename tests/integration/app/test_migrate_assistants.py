"""`lats migrate` with assistants: SQLite to Postgres and back, each tenant's assistants (the same
id under several tenants, and under none) equal on both sides and read by their tenant."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.settings import Settings
from app.store.assistant_base import AssistantRecord
from app.store.backend import open_backend
from app.store.migrate import Location, migrate, open_side
from app.store.migrate_units import Assistants, Side

T0 = datetime(2026, 5, 1, 12, tzinfo=UTC)
MADE = [
    AssistantRecord(
        id=assistant_id,
        tenant=tenant,
        name=f"{tenant}'s {assistant_id}",
        description="d" if tenant else None,
        params={"max_paths": k + 1, "collections": [f"c{k}"]},
        metadata={"k": k, "nested": {"list": [1, 2.5, None]}},
        version=k + 1,
        created_at=T0 + timedelta(minutes=k),
        updated_at=T0 + timedelta(hours=k),
    )
    for k, (tenant, assistant_id) in enumerate(
        [("alice", "research"), ("bob", "research"), (None, "research"), ("alice", "fast")]
    )
]


@asynccontextmanager
async def _side(where: str | Path, settings: Settings, *, source: bool) -> AsyncIterator[Side]:
    at = Location(url=where) if isinstance(where, str) else Location(path=where)
    async with open_side(at, settings, source=source) as opened:
        yield opened


async def _digests(side: Side) -> dict[str, str]:
    kind = Assistants()
    keys = await kind.keys(side, "", 2)  # pages of two: the listing goes on after a key
    keys += await kind.keys(side, keys[-1], 100)
    return {key: unit.digest for key in keys if (unit := await kind.read(side, key))}


async def _read(side: Side) -> list[AssistantRecord | None]:
    return [await side.store.assistants.get(a.tenant, a.id) for a in MADE]


async def test_assistants_go_to_postgres_and_back_equal_per_tenant(
    tmp_path: Path, settings: Settings, postgres_url: str
) -> None:
    async with open_backend(settings.model_copy(update={"data_dir": tmp_path / "source"})) as (
        store,
        _,
    ):
        for assistant in MADE:
            await store.assistants.create(assistant)
    async with _side(tmp_path / "source", settings, source=True) as source:
        expected = await _digests(source)
        async with _side(postgres_url, settings, source=False) as pg:
            there = await migrate(source, pg)
            on_postgres, read_there = await _digests(pg), await _read(pg)
    async with (
        _side(postgres_url, settings, source=True) as pg,
        _side(tmp_path / "back", settings, source=False) as back,
    ):
        home = await migrate(pg, back)
        again = await migrate(pg, back)
        returned, read_back = await _digests(back), await _read(back)

    assert there.verified, there.mismatches
    assert home.verified, home.mismatches
    assert there.copied == {"assistant": 4} == home.copied
    assert again.skipped == {"assistant": 4}
    assert there.source_rows == {"assistants": 4} == home.target_rows
    assert len(expected) == 4
    assert on_postgres == expected == returned
    assert read_there == MADE == read_back
