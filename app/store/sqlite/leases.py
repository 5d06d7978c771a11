"""Leases on SQLite, in wall-clock seconds (the file is shared by the processes of one
machine): a claim takes a free or expired lease inside the writer's transaction, so no two
workers take one run."""

from __future__ import annotations

import sqlite3
import time

from app.store.base import Held, LeaseLost, RunRecord, RunStatus
from app.store.reads import Part, count, held
from app.store.sqlite.db import OPEN, SqliteDb, marks, now, row

_CLAIMABLE = f"{OPEN} AND awaiting IS NULL"  # unfinished, not waiting for a caller
# In a claim by owner ?: 1 when the run is taken from another owner that still held it (its
# lease ran out), 0 for a free run (queued, or given back) or one's own.
_TAKEN = "(CASE WHEN owner IS NOT NULL AND owner <> ? THEN 1 ELSE 0 END)"


class SqliteLeases(Part[SqliteDb]):
    """`Leases` on SQLite."""

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        at = time.time()

        def write(conn: sqlite3.Connection) -> sqlite3.Row | None:
            cur = conn.execute(
                f"UPDATE runs SET owner = ?, lease_until = ?, takeovers = takeovers + {_TAKEN}"
                f" WHERE id = ? AND {OPEN} AND (lease_until < ? OR owner = ?)",
                (owner, at + ttl_s, owner, run_id, at, owner),
            )
            if cur.rowcount != 1:
                return None
            return row(conn, "SELECT * FROM runs WHERE id = ?", (run_id,))

        claimed = await self._db.write(write)
        return self._db.record(claimed) if claimed else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        claimed = await self.claim_some(owner, ttl_s, 1)
        return claimed[0] if claimed else None

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        at = time.time()
        # Look before queueing a write: most sweeps find nothing.
        claimable = f"SELECT 1 FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
        if await self._db.one(claimable, (at,)) is None:
            return []

        def write(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            picked = conn.execute(
                f"SELECT id FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
                " ORDER BY created_at LIMIT ?",
                (at, limit),
            ).fetchall()
            rows = []
            for pick in picked:
                conn.execute(
                    f"UPDATE runs SET owner = ?, lease_until = ?,"
                    f" takeovers = takeovers + {_TAKEN} WHERE id = ?",
                    (owner, at + ttl_s, owner, pick["id"]),
                )
                claimed = row(conn, "SELECT * FROM runs WHERE id = ?", (pick["id"],))
                if claimed is not None:
                    rows.append(claimed)
            return rows

        return [self._db.record(claimed) for claimed in await self._db.write(write)]

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        ids = marks(run_ids)
        until = time.time() + ttl_s

        def write(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            conn.execute(
                f"UPDATE runs SET lease_until = ? WHERE owner = ? AND {OPEN} AND id IN ({ids})",
                (until, owner, *run_ids),
            )
            return conn.execute(
                f"SELECT id, cancel_requested FROM runs WHERE owner = ? AND {OPEN}"
                f" AND id IN ({ids})",
                (owner, *run_ids),
            ).fetchall()

        return [held(r) for r in await self._db.write(write)]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        def write(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE runs SET status = ?, updated_at = ?, owner = NULL, lease_until = 0"
                f" WHERE id = ? AND owner = ? AND {OPEN}",
                (status, now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")

        await self._db.write(write)

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                f"UPDATE runs SET status = 'running', updated_at = ? WHERE id = ? AND owner = ?"
                f" AND {OPEN}",
                (now(), run_id, owner),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            found = row(conn, "SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
            return bool(found and found[0])

        return await self._db.write(write)

    async def request_cancel(self, run_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(f"UPDATE runs SET cancel_requested = 1 WHERE id = ? AND {OPEN}", (run_id,))

        await self._db.write(write)

    async def cancel_requests(self, owner: str) -> list[str]:
        rows = await self._db.all(
            f"SELECT id FROM runs WHERE owner = ? AND cancel_requested = 1 AND {OPEN}", (owner,)
        )
        return [r["id"] for r in rows]

    async def count_unclaimed(self) -> int:
        sql = f"SELECT count(*) AS n FROM runs WHERE {_CLAIMABLE} AND lease_until < ?"
        return await count(self._db, sql, (time.time(),))
