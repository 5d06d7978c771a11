"""`lats migrate` with assistants: SQLite to Postgres and back, each tenant's assistants (the same
id under several tenants, and under none) equal on both sides and read by their tenant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from app.settings import Settings
from app.store.assistant_base import AssistantRecord
from app.store.backend import open_backend
from app.store.migrate_units import Assistants, Side
from tests.support.migrate_sides import round_trip

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


async def _digests(side: Side) -> dict[str, str]:
    kind = Assistants()
    keys = await kind.keys(side, "", 2)  # pages of two: the listing goes on after a key
    keys += await kind.keys(side, keys[-1], 100)
    return {key: unit.digest for key in keys if (unit := await kind.read(side, key))}


async def _read(side: Side) -> list[AssistantRecord | None]:
    return [await side.store.assistants.get(a.tenant, a.id) for a in MADE]


class Seen(NamedTuple):
    """What a side holds: its assistants' digests by key, and each of MADE as it reads there."""

    digests: dict[str, str]
    assistants: list[AssistantRecord | None]


async def _seen(side: Side) -> Seen:
    return Seen(await _digests(side), await _read(side))


async def test_assistants_go_to_postgres_and_back_equal_per_tenant(
    tmp_path: Path, settings: Settings, postgres_url: str
) -> None:
    async with open_backend(settings.model_copy(update={"data_dir": tmp_path / "source"})) as (
        store,
        _,
    ):
        for assistant in MADE:
            await store.assistants.create(assistant)

    trip = await round_trip(tmp_path, postgres_url, settings, _seen)

    assert trip.there.verified, trip.there.mismatches
    assert trip.home.verified, trip.home.mismatches
    assert trip.there.copied == {"assistant": 4} == trip.home.copied
    assert trip.again.skipped == {"assistant": 4}
    assert trip.there.source_rows == {"assistants": 4} == trip.home.target_rows
    assert len(trip.source.digests) == 4
    assert trip.postgres.digests == trip.source.digests == trip.back.digests
    assert trip.postgres.assistants == MADE == trip.back.assistants
