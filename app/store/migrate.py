"""`lats migrate`: copy every run, event and checkpoint, every document collection and every
assistant, from one store to another (SQLite to Postgres and back), resumably, and verify the
copy.

Three passes over each collection (`app/store/migrate_units.py: COLLECTIONS`):

1. **Survey** the target. A unit it holds that the source lacks is another store's; one that
   the source holds with other content was either written by an earlier, interrupted migration
   from this source (the ledger says so: it is redone) or is a conflict. Without `merge` a
   target holding any unit that is not this source's is refused; with it only conflicts are.
   Nothing is written before the survey passes.
2. **Copy** what the target lacks or holds half-copied. Each unit is marked in the target's
   ledger before it is written; a unit already equal on both sides is skipped.
3. **Verify**: every source unit's digest equals the target's, and the rows per table agree.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from app.errors import ServiceError
from app.settings import Settings
from app.store.backend import open_backend
from app.store.migrate_tables import PostgresTables, SqliteTables
from app.store.migrate_units import COLLECTIONS, Collection, RunTables, Side, sum_counts

logger = logging.getLogger(__name__)
SHOWN_KEYS = 5  # ids named in a refusal or a mismatch


class MigrationError(ServiceError, code="migration"):
    """The migration cannot go on (a store unreachable, a target refused)."""


class LocationError(MigrationError, code="migration_location"):
    """A location that names no store the migration can use."""


@dataclass(frozen=True)
class Location:
    """A store as the user named it: a Postgres URL or a data directory."""

    url: str | None = None
    path: Path | None = None

    @property
    def identity(self) -> str:
        """The same store however it is spelled; never a password."""
        if self.url is not None:
            info = conninfo_to_dict(self.url)
            user = info.get("user", "")
            host, port = info.get("host", "localhost"), info.get("port", "5432")
            return f"postgresql://{user}@{host}:{port}/{info.get('dbname', user)}"
        assert self.path is not None
        return str(self.path.resolve())


def parse_location(text: str) -> Location:
    """`postgresql://…` (or `postgres://…`) is Postgres; anything else without a scheme is a
    data directory of the SQLite store."""
    if text.startswith(("postgresql://", "postgres://")):
        try:
            conninfo_to_dict(text)
        except psycopg.ProgrammingError as e:
            raise LocationError(f"not a Postgres URL: {e}") from e
        return Location(url=text)
    if "://" in text:
        raise LocationError(
            f"{text.split('://')[0]}:// is not a store: a postgresql:// URL or a data directory"
        )
    if not text.strip():
        raise LocationError("an empty location: a postgresql:// URL or a data directory")
    return Location(path=Path(text))


def locations(source: str, target: str) -> tuple[Location, Location]:
    """The two stores of a migration; they must differ."""
    source_at, target_at = parse_location(source), parse_location(target)
    if source_at.identity == target_at.identity:
        raise LocationError("the source and the target are the same store")
    return source_at, target_at


@dataclass
class Report:
    """What a migration did and what its verification found."""

    copied: dict[str, int] = field(default_factory=dict)  # per collection
    skipped: dict[str, int] = field(default_factory=dict)  # already equal on the target
    source_rows: dict[str, int] = field(default_factory=dict)  # per table, of the source's units
    target_rows: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.mismatches

    def lines(self) -> list[str]:
        """The report for its user."""
        out = [
            f"{kind}s: {n} copied, {self.skipped.get(kind, 0)} already in the target"
            for kind, n in self.copied.items()
        ]
        if self.verified:
            rows = ", ".join(f"{table} {n}" for table, n in sorted(self.source_rows.items()))
            out.append(f"verified, equal on both sides: {rows or 'nothing to copy'}")
        return out


Progress = Callable[[str, int], None]  # (collection, units copied so far)


def _quiet(kind: str, copied: int) -> None:
    pass


_STORE_ERRORS = (psycopg.Error, sqlite3.Error, OSError)


def _problem(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


@asynccontextmanager
async def open_side(location: Location, settings: Settings, *, source: bool) -> AsyncIterator[Side]:
    """The store at `location`, opened as the service opens it (`open_backend`: its schema is
    brought up to date); a source must already hold a run store, a target is created."""
    role = "source" if source else "target"
    name = location.identity
    async with AsyncExitStack() as stack:
        try:
            tables: RunTables
            if location.url is not None:
                pg = await PostgresTables.connect(location.url)
                stack.push_async_callback(pg.close)
                if source and not await pg.has_runs():
                    raise MigrationError(f"the source {name} holds no run store")
                part = settings.model_copy(update={"database_url": location.url})
                store, saver = await stack.enter_async_context(open_backend(part))
                if not source:
                    await pg.create_ledger()
                tables = pg
            else:
                assert location.path is not None
                if source and not (location.path / "runs.sqlite").is_file():
                    raise MigrationError(f"the source {name} holds no run store (no runs.sqlite)")
                if not source and location.path.exists() and not location.path.is_dir():
                    raise MigrationError(f"the target {name} is not a directory")
                part = settings.model_copy(update={"database_url": None, "data_dir": location.path})
                store, saver = await stack.enter_async_context(open_backend(part))
                lite = await SqliteTables.open(location.path / "runs.sqlite", ledger=not source)
                stack.push_async_callback(lite.close)
                tables = lite
        except _STORE_ERRORS as e:
            raise MigrationError(f"cannot open the {role} {name}: {_problem(e)}") from e
        yield Side(identity=name, store=store, saver=saver, tables=tables)


async def _pages(coll: Collection, side: Side, batch: int) -> AsyncIterator[list[str]]:
    after = ""
    while keys := await coll.keys(side, after, batch):
        yield keys
        after = keys[-1]


def _some(keys: list[str]) -> str:
    more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
    return ", ".join(keys[:SHOWN_KEYS]) + more


async def _survey(
    coll: Collection, source: Side, target: Side, *, merge: bool, batch: int
) -> set[str]:
    """The keys the target already holds as the source does; refuses a target it may not
    write into."""
    others: list[str] = []
    conflicts: list[str] = []
    done: set[str] = set()
    async for keys in _pages(coll, target, batch):
        ledger = await target.tables.ledger(coll.kind, keys)
        for key in keys:
            theirs = await coll.read(source, key)
            if theirs is None:
                others.append(key)
                continue
            ours = await coll.read(target, key)
            if ours is not None and ours.digest == theirs.digest:
                done.add(key)
            elif ledger.get(key) != source.identity:
                conflicts.append(key)
    if conflicts:
        raise MigrationError(
            f"{len(conflicts)} {coll.kind}s are on both sides with different content"
            f" ({_some(conflicts)}); nothing was copied"
        )
    if others and not merge:
        raise MigrationError(
            f"the target {target.identity} already holds {len(others)} {coll.kind}s the source"
            f" lacks ({_some(others)}); --merge adds the source's to them"
        )
    return done


async def _copy(
    coll: Collection,
    source: Side,
    target: Side,
    done: set[str],
    report: Report,
    *,
    batch: int,
    progress: Progress,
) -> None:
    copied = skipped = listed = 0
    async for keys in _pages(coll, source, batch):
        listed += len(keys)
        for key in keys:
            if key in done:
                skipped += 1
                continue
            unit = await coll.read(source, key)
            if unit is None:  # deleted since it was listed
                continue
            # Marked first: if the copy stops half-way, the next migration knows it wrote
            # the half it finds.
            await target.tables.mark(coll.kind, key, source.identity)
            await coll.write(target, unit)
            copied += 1
            progress(coll.kind, copied)
        logger.info("migrate: %s %ss copied, %s already there", copied, coll.kind, skipped)
    if listed:  # a kind the source holds none of is left out of the report
        report.copied[coll.kind] = copied
        report.skipped[coll.kind] = skipped


async def _verify(
    coll: Collection, source: Side, target: Side, report: Report, *, batch: int
) -> None:
    differ: list[str] = []
    async for keys in _pages(coll, source, batch):
        for key in keys:
            theirs = await coll.read(source, key)
            ours = await coll.read(target, key)
            sum_counts(report.source_rows, theirs)
            sum_counts(report.target_rows, ours)
            if theirs is not None and (ours is None or ours.digest != theirs.digest):
                differ.append(key)
    if differ:
        report.mismatches.append(f"{len(differ)} {coll.kind}s differ: {_some(differ)}")


async def migrate(
    source: Side,
    target: Side,
    *,
    merge: bool = False,
    batch: int = 100,
    progress: Progress = _quiet,
) -> Report:
    """Copy every unit of `source` into `target`, then verify; the report (its `mismatches`
    say what verification found unequal). Raises `MigrationError` when the target is refused."""
    try:
        return await _migrate(source, target, merge=merge, batch=batch, progress=progress)
    except _STORE_ERRORS as e:
        raise MigrationError(f"the migration stopped ({_problem(e)}); run it again to go on") from e


async def _migrate(
    source: Side, target: Side, *, merge: bool, batch: int, progress: Progress
) -> Report:
    report = Report()
    surveyed = [
        (coll, await _survey(coll, source, target, merge=merge, batch=batch))
        for coll in COLLECTIONS
    ]
    for coll, done in surveyed:
        await _copy(coll, source, target, done, report, batch=batch, progress=progress)
    for coll in COLLECTIONS:
        await _verify(coll, source, target, report, batch=batch)
    for table in sorted(set(report.source_rows) | set(report.target_rows)):
        have, got = report.source_rows.get(table, 0), report.target_rows.get(table, 0)
        if have != got:
            report.mismatches.append(f"table {table}: {have} rows in the source, {got} copied")
    if not merge:
        # Nothing else may be in the target's tables either.
        theirs, ours = await source.tables.counts(), await target.tables.counts()
        for table, n in theirs.items():
            if ours.get(table) != n:
                report.mismatches.append(
                    f"table {table}: {n} rows in the source, {ours.get(table)} in the target"
                )
    return report
