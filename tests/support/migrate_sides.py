"""The sides of `lats migrate` as the migration tests open them, and the round trip of a data
folder's store to Postgres and back into another folder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from app.settings import Settings
from app.store.migrate import Location, Report, migrate, open_side
from app.store.migrate_units import Side

SeenT = TypeVar("SeenT")


@asynccontextmanager
async def side(where: str | Path, settings: Settings, *, source: bool) -> AsyncIterator[Side]:
    """The store at a database URL or in a data folder, opened as a migration's source or
    target."""
    at = Location(url=where) if isinstance(where, str) else Location(path=where)
    async with open_side(at, settings, source=source) as opened:
        yield opened


@dataclass(frozen=True)
class RoundTrip(Generic[SeenT]):
    """The reports of a round trip's migrations, and what was seen on each side after them."""

    there: Report  # the source folder's store to Postgres
    home: Report  # Postgres to the folder `back`
    again: Report  # the same once more: everything is already there
    source: SeenT
    postgres: SeenT
    back: SeenT


async def round_trip(
    folder: Path,
    postgres_url: str,
    settings: Settings,
    look: Callable[[Side], Awaitable[SeenT]],
) -> RoundTrip[SeenT]:
    """Migrates the store in `folder`/source to the database at `postgres_url`, then that
    database to a new store in `folder`/back, twice; `look` is what each side shows after."""
    async with side(folder / "source", settings, source=True) as source:
        on_source = await look(source)
        async with side(postgres_url, settings, source=False) as pg:
            there = await migrate(source, pg)
            on_postgres = await look(pg)
    async with (
        side(postgres_url, settings, source=True) as pg,
        side(folder / "back", settings, source=False) as back,
    ):
        home = await migrate(pg, back)
        again = await migrate(pg, back)
        on_back = await look(back)
    return RoundTrip(there, home, again, on_source, on_postgres, on_back)
