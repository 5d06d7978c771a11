"""The embedded store: one SQLite file in WAL mode. Several processes may share it: writes are
`BEGIN IMMEDIATE` transactions (the write lock is taken up front, so the busy timeout applies
and no transaction has to upgrade a read lock), batched by `BatchWriter` (group commit); leases
are wall-clock seconds (one machine)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from agents.result import RunResult
from app.store.base import (
    Held,
    Lease,
    LeaseLost,
    RunRecord,
    RunStatus,
    ThreadRecord,
    TooManyOpen,
    WebhookDelivery,
)
from app.store.disk import DiskSpace, WriteKind
from app.store.reads import OPEN_SQL, Dialect, Row, RunReads, run_record
from app.store.sqlite_writer import BatchWriter
from app.store.upgrade import TERMINAL, result_of_terminal

BUSY_TIMEOUT_MS = 30_000
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    result TEXT,
    owner TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    tenant TEXT,
    takeovers INTEGER NOT NULL DEFAULT 0,
    thread_id TEXT,
    awaiting TEXT,
    answer TEXT,
    webhook TEXT,
    delivery TEXT
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at DESC);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS commands (
    run_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    command TEXT NOT NULL,
    node_id TEXT NOT NULL,
    step TEXT,
    sent_by TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    tenant TEXT,
    created_at TEXT NOT NULL
);
"""
# Files written before leases (or tenants, take-over counts, threads) existed get the columns added
# in place.
_ADDED_COLUMNS = {
    "owner": "TEXT",
    "lease_until": "REAL NOT NULL DEFAULT 0",
    "cancel_requested": "INTEGER NOT NULL DEFAULT 0",
    "tenant": "TEXT",
    "takeovers": "INTEGER NOT NULL DEFAULT 0",
    "thread_id": "TEXT",
    "awaiting": "TEXT",
    "answer": "TEXT",
    "webhook": "TEXT",
    "delivery": "TEXT",
}
_TENANT_INDEX = "CREATE INDEX IF NOT EXISTS runs_tenant ON runs (tenant, created_at DESC)"
_THREAD_INDEX = "CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id, created_at)"
_OPEN = OPEN_SQL
_ENDED = "status IN ('done', 'failed', 'cancelled')"  # base.FINISHED
_CLAIMABLE = f"{_OPEN} AND awaiting IS NULL"  # unfinished, not waiting for a caller
# In a claim by owner ?: 1 when the run is taken from another owner that still held it (its
# lease ran out), 0 for a free run (queued, or given back) or one's own.
_TAKEN = "(CASE WHEN owner IS NOT NULL AND owner <> ? THEN 1 ELSE 0 END)"


# The next event of a run, if `owner` holds it: its seq, or no row.
_APPEND = f"""
INSERT INTO events (run_id, seq, type, data)
SELECT ?, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = ?), 0) + 1, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ? AND {_OPEN})
RETURNING seq
"""
# A steering command of an open run, numbered after its others: its id, or no row.
_ADD_COMMAND = f"""
INSERT INTO commands (run_id, id, command, node_id, step, sent_by, created_at)
SELECT ?, COALESCE((SELECT MAX(id) FROM commands WHERE run_id = ?), 0) + 1, ?, ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND {_OPEN})
RETURNING id
"""
# Unfinished runs whose last event is terminal, with that event.
_LOGGED_ENDS = f"""
SELECT runs.id, events.type, events.data FROM runs JOIN events ON events.run_id = runs.id
WHERE {_OPEN} AND events.type IN ({", ".join(f"'{t}'" for t in TERMINAL)})
  AND events.seq = (SELECT MAX(seq) FROM events WHERE run_id = runs.id)
"""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _record(row: Row) -> RunRecord:
    # SQLite keeps JSON and times as text, and booleans as integers.
    return run_record(
        row,
        params=json.loads(row["params"]),
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        result=RunResult.model_validate_json(row["result"]) if row["result"] else None,
        answer=json.loads(row["answer"]) if row["answer"] else None,
        cancel_requested=bool(row["cancel_requested"]),
        delivery=WebhookDelivery.model_validate_json(row["delivery"]) if row["delivery"] else None,
    )


class SqliteRunStore(RunReads):
    """`RunStore` on SQLite. Writes go through one `BatchWriter` (group commit on its own
    connection); reads through a second connection, which in WAL mode never waits for them."""

    dialect = Dialect(
        runs="runs",
        events="events",
        threads="threads",
        commands="commands",
        same="IS",
        no_limit=-1,
    )

    def __init__(
        self, writer: BatchWriter, reader: aiosqlite.Connection, disk: DiskSpace | None = None
    ) -> None:
        self._writer = writer
        self._reader = reader
        self.disk = disk

    async def _write(
        self, write: Callable[[sqlite3.Connection], T], kind: WriteKind = "other"
    ) -> T:
        """`write` through the batch writer, under the full-disk rules (`DiskSpace.write`)."""
        if self.disk is None:
            return await self._writer.write(write)
        return await self.disk.write(lambda: self._writer.write(write), kind)

    @classmethod
    async def open(cls, path: Path, *, reserve_bytes: int | None = None) -> SqliteRunStore:
        """The store in the SQLite file `path`; with `reserve_bytes`, a reserve of that many
        bytes is kept beside it for a full disk (app/store/disk.py)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        disk = DiskSpace(path.parent, reserve_bytes) if reserve_bytes is not None else None
        if disk is not None:
            disk.open()
        writer = await BatchWriter.open(path, BUSY_TIMEOUT_MS)
        try:
            await writer.write(_migrate)
            reader = await aiosqlite.connect(path, isolation_level=None)
        except BaseException:
            await writer.close()
            raise
        reader.row_factory = aiosqlite.Row
        await reader.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return cls(writer, reader, disk)

    async def close(self) -> None:
        try:
            await self._writer.close()
        finally:
            await self._reader.close()

    async def _one(self, sql: str, args: tuple[Any, ...]) -> aiosqlite.Row | None:
        # One trip to the reading connection's thread (a cursor would take three).
        rows = await self._reader.execute_fetchall(sql, args)
        return next(iter(rows), None)

    async def _all(self, sql: str, args: tuple[Any, ...]) -> list[aiosqlite.Row]:
        return list(await self._reader.execute_fetchall(sql, args))

    def _record(self, row: Row) -> RunRecord:
        return _record(row)

    # -- runs and leases -------------------------------------------------------------------------
    async def create_run(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        owner = lease.owner if lease is not None else None
        until = time.time() + lease.ttl_s if lease is not None else 0.0
        run = (
            record.id,
            record.task,
            json.dumps(record.params),
            record.status,
            record.created_at.isoformat(),
            record.updated_at.isoformat(),
            owner,
            until,
            record.tenant,
            record.thread_id,
            record.webhook,
        )

        def write(conn: sqlite3.Connection) -> None:
            # One writer, one transaction per batch: the count below and the insert are atomic.
            if max_open is not None:
                (n,) = conn.execute(
                    f"SELECT COUNT(*) FROM runs WHERE tenant IS ? AND {_OPEN}", (record.tenant,)
                ).fetchone()
                if n >= max_open:
                    raise TooManyOpen(max_open)
            conn.execute(
                "INSERT INTO runs (id, task, params, status, created_at, updated_at, result,"
                " owner, lease_until, tenant, thread_id, webhook)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)",
                run,
            )
            if started is not None:
                conn.execute(
                    "INSERT INTO events (run_id, seq, type, data) VALUES (?, 1, 'run_started', ?)",
                    (record.id, started),
                )

        await self._write(write, "new")

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        now = time.time()

        def write(conn: sqlite3.Connection) -> sqlite3.Row | None:
            cur = conn.execute(
                f"UPDATE runs SET owner = ?, lease_until = ?, takeovers = takeovers + {_TAKEN}"
                f" WHERE id = ? AND {_OPEN} AND (lease_until < ? OR owner = ?)",
                (owner, now + ttl_s, owner, run_id, now, owner),
            )
            if cur.rowcount != 1:
                return None
            return _row(conn, "SELECT * FROM runs WHERE id = ?", (run_id,))

        row = await self._write(write)
        return _record(row) if row else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        claimed = await self.claim_some(owner, ttl_s, 1)
        return claimed[0] if claimed else None

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        now = time.time()
        # Look before queueing a write: most sweeps find nothing.
        claimable = f"SELECT 1 FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
        if await self._one(claimable, (now,)) is None:
            return []

        def write(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            picked = conn.execute(
                f"SELECT id FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
                " ORDER BY created_at LIMIT ?",
                (now, limit),
            ).fetchall()
            rows = []
            for row in picked:
                conn.execute(
                    f"UPDATE runs SET owner = ?, lease_until = ?,"
                    f" takeovers = takeovers + {_TAKEN} WHERE id = ?",
                    (owner, now + ttl_s, owner, row["id"]),
                )
                claimed = _row(conn, "SELECT * FROM runs WHERE id = ?", (row["id"],))
                if claimed is not None:
                    rows.append(claimed)
            return rows

        return [_record(row) for row in await self._write(write)]

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        marks = ", ".join("?" for _ in run_ids)
        until = time.time() + ttl_s

        def write(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            conn.execute(
                f"UPDATE runs SET lease_until = ? WHERE owner = ? AND {_OPEN} AND id IN ({marks})",
                (until, owner, *run_ids),
            )
            return conn.execute(
                f"SELECT id, cancel_requested FROM runs WHERE owner = ? AND {_OPEN}"
                f" AND id IN ({marks})",
                (owner, *run_ids),
            ).fetchall()

        rows = await self._write(write)
        return [Held(run_id=r["id"], cancel_requested=bool(r["cancel_requested"])) for r in rows]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        def write(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE runs SET status = ?, updated_at = ?, owner = NULL, lease_until = 0"
                f" WHERE id = ? AND owner = ? AND {_OPEN}",
                (status, _now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")

        await self._write(write)

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                f"UPDATE runs SET status = 'running', updated_at = ? WHERE id = ? AND owner = ?"
                f" AND {_OPEN}",
                (_now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            row = _row(conn, "SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
            return bool(row and row[0])

        return await self._write(write)

    async def cancel_requests(self, owner: str) -> list[str]:
        rows = await self._all(
            f"SELECT id FROM runs WHERE owner = ? AND cancel_requested = 1 AND {_OPEN}", (owner,)
        )
        return [r["id"] for r in rows]

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            seq = _append(conn, run_id, owner, type_, data)
            conn.execute(
                "UPDATE runs SET status = 'interrupted', awaiting = ?, answer = NULL,"
                " updated_at = ?, owner = NULL, lease_until = 0 WHERE id = ?",
                (awaiting, _now(), run_id),
            )
            return seq

        return await self._write(write, "end")

    async def answer_waiting(self, run_id: str, answer: dict[str, Any]) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE runs SET awaiting = NULL, answer = ?, status = 'queued', updated_at = ?"
                f" WHERE id = ? AND awaiting IS NOT NULL AND {_OPEN}",
                (json.dumps(answer), _now(), run_id),
            )
            return cur.rowcount == 1

        return await self._write(write)

    async def add_command(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        def write(conn: sqlite3.Connection) -> int | None:
            row = _row(
                conn, _ADD_COMMAND, (run_id, run_id, command, node_id, step, by, _now(), run_id)
            )
            return int(row[0]) if row else None

        return await self._write(write, "grow")

    async def record_delivery(self, run_id: str, delivery: WebhookDelivery) -> None:
        data = delivery.model_dump_json()

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE runs SET delivery = ? WHERE id = ?", (data, run_id))

        await self._write(write, "grow")

    async def request_cancel(self, run_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"UPDATE runs SET cancel_requested = 1 WHERE id = ? AND {_OPEN}", (run_id,)
            )

        await self._write(write)

    # -- the event log -------------------------------------------------------------------------
    async def append_event(self, run_id: str, owner: str, type_: str, data: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            return _append(conn, run_id, owner, type_, data)

        return await self._write(write, "grow")

    async def append_events(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        def write(conn: sqlite3.Connection) -> list[int]:
            return [_append(conn, run_id, owner, type_, data) for type_, data in events]

        return await self._write(write, "grow")

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        def write(conn: sqlite3.Connection) -> int:
            seq = _append(conn, run_id, owner, type_, data)
            _end(conn, run_id, result)
            return seq

        return await self._write(write, "end")

    # -- reading -----------------------------------------------------------------------------------
    async def count_unclaimed(self) -> int:
        sql = f"SELECT count(*) AS n FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
        return await self._count(sql, (time.time(),))

    async def data_version(self) -> int:
        """Changes whenever another connection (another process) commits to the file. Asked of
        the writing connection: this process's own commits do not change it there."""

        def read(conn: sqlite3.Connection) -> int:
            return int(conn.execute("PRAGMA data_version").fetchone()[0])

        return await self._writer.read(read)

    async def delete_run(self, run_id: str) -> bool:
        return await self._write(lambda conn: _delete(conn, [run_id]) == 1)

    async def create_thread(self, thread: ThreadRecord) -> None:
        row = (thread.id, thread.tenant, thread.created_at.isoformat())

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO threads (id, tenant, created_at) VALUES (?, ?, ?)", row)

        await self._write(write, "new")

    async def delete_thread(self, thread_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if _row(conn, f"SELECT 1 FROM runs WHERE thread_id = ? AND {_OPEN}", (thread_id,)):
                return False
            ids = [
                r["id"]
                for r in conn.execute("SELECT id FROM runs WHERE thread_id = ?", (thread_id,))
            ]
            _delete(conn, ids)
            conn.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            return True

        return await self._write(write)

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        def write(conn: sqlite3.Connection) -> int:
            rows = conn.execute(
                f"SELECT id FROM runs WHERE {_ENDED} AND updated_at < ? LIMIT ?",
                (cutoff.isoformat(), limit),
            ).fetchall()
            return _delete(conn, [row["id"] for row in rows])

        return await self._write(write)


def _migrate(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    have = {row["name"] for row in conn.execute("PRAGMA table_info(runs)").fetchall()}
    for name, kind in _ADDED_COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    conn.execute(_TENANT_INDEX)
    conn.execute(_THREAD_INDEX)
    _end_logged_runs(conn)


def _end_logged_runs(conn: sqlite3.Connection) -> None:
    """Give each unfinished run whose terminal event is stored the status and result it
    stands for (a file written before the end was one transaction). Idempotent."""
    for row in conn.execute(_LOGGED_ENDS).fetchall():
        result = result_of_terminal(row["id"], row["type"], row["data"])
        _end(conn, row["id"], result)


def _delete(conn: sqlite3.Connection, run_ids: list[str]) -> int:
    """Delete those of `run_ids` that are finished, with their events; how many."""
    if not run_ids:
        return 0
    marks = ", ".join("?" for _ in run_ids)
    ended = [
        row["id"]
        for row in conn.execute(f"SELECT id FROM runs WHERE id IN ({marks}) AND {_ENDED}", run_ids)
    ]
    if ended:
        marks = ", ".join("?" for _ in ended)
        conn.execute(f"DELETE FROM events WHERE run_id IN ({marks})", ended)
        conn.execute(f"DELETE FROM commands WHERE run_id IN ({marks})", ended)
        conn.execute(f"DELETE FROM runs WHERE id IN ({marks})", ended)
    return len(ended)


def _row(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(sql, args).fetchone()
    return row


def _append(conn: sqlite3.Connection, run_id: str, owner: str, type_: str, data: str) -> int:
    # One statement: the fence, the next seq and the insert.
    row = _row(conn, _APPEND, (run_id, run_id, type_, data, run_id, owner))
    if row is None:
        raise LeaseLost(f"run {run_id} is not held by {owner}")
    return int(row[0])


def _end(conn: sqlite3.Connection, run_id: str, result: RunResult) -> None:
    conn.execute(
        "UPDATE runs SET status = ?, updated_at = ?, result = ?, owner = NULL,"
        " lease_until = 0, awaiting = NULL WHERE id = ?",
        (result.status, _now(), result.model_dump_json(), run_id),
    )
