"""Leases on Postgres, on the database's clock (`now()`), so that workers on different machines
agree on expiry: a claim is one `UPDATE` of a free or expired lease; a sweep skips the rows
another claimer has locked."""

from __future__ import annotations

from psycopg.rows import dict_row

from app.store.base import Held, LeaseLost, RunRecord, RunStatus
from app.store.postgres.db import CANCEL_CHANNEL, OPEN, QUEUED_CHANNEL, PostgresDb
from app.store.reads import OPEN_SQL, Part, count, held

_LEASE = "now() + make_interval(secs => %s)"
# In a claim by owner %s: 1 when the run is taken from another owner that still held it (its
# lease ran out), 0 for a free run (queued, or given back) or one's own.
_TAKEN = "(CASE WHEN owner IS NOT NULL AND owner <> %s THEN 1 ELSE 0 END)"
# A claim by owner %s for %s seconds of the run the WHERE clause that follows picks.
_CLAIM = (
    f"UPDATE lats_runs SET owner = %s, lease_until = {_LEASE}, takeovers = takeovers + {_TAKEN}"
    " WHERE"
)


class PostgresLeases(Part[PostgresDb]):
    """`Leases` on Postgres."""

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        row = await self._db.one(
            f"{_CLAIM} id = %s AND status = ANY(%s) AND (lease_until < now() OR owner = %s)"
            " RETURNING *",
            (owner, ttl_s, owner, run_id, OPEN, owner),
        )
        return self._db.record(row) if row else None

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        claimed = await self.claim_some(owner, ttl_s, 1)
        return claimed[0] if claimed else None

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        rows = await self._db.all(
            f"{_CLAIM} id IN (SELECT id FROM lats_runs WHERE status = ANY(%s)"
            " AND awaiting IS NULL AND lease_until < now()"
            " ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED)"
            " RETURNING *",
            (owner, ttl_s, owner, OPEN, limit),
        )
        records = (self._db.record(row) for row in rows)
        return sorted(records, key=lambda record: record.created_at)

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        if not run_ids:
            return []
        async with self._db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                f"UPDATE lats_runs SET lease_until = {_LEASE}"
                " WHERE owner = %s AND status = ANY(%s) AND id = ANY(%s)"
                " RETURNING id, cancel_requested",
                (ttl_s, owner, OPEN, run_ids),
            )
            rows = await cur.fetchall()
        return [held(r) for r in rows]

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        async with self._db.connection() as conn, self._db.notifying(conn):
            cur = await conn.execute(
                "UPDATE lats_runs SET status = %s, updated_at = now(), owner = NULL,"
                " lease_until = 'epoch' WHERE id = %s AND owner = %s AND status = ANY(%s)",
                (status, run_id, owner, OPEN),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"run {run_id} is not held by {owner}")
            await self._db.send(conn, QUEUED_CHANNEL, run_id)

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "UPDATE lats_runs SET status = 'running', updated_at = now()"
                " WHERE id = %s AND owner = %s AND status = ANY(%s) RETURNING cancel_requested",
                (run_id, owner, OPEN),
            )
            row = await cur.fetchone()
        if row is None:
            raise LeaseLost(f"run {run_id} is not held by {owner}")
        return bool(row[0])

    async def request_cancel(self, run_id: str) -> None:
        async with self._db.connection() as conn, self._db.notifying(conn):
            await conn.execute(
                "UPDATE lats_runs SET cancel_requested = true WHERE id = %s AND status = ANY(%s)",
                (run_id, OPEN),
            )
            await self._db.send(conn, CANCEL_CHANNEL, run_id)

    async def cancel_requests(self, owner: str) -> list[str]:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT id FROM lats_runs WHERE owner = %s AND cancel_requested"
                " AND status = ANY(%s)",
                (owner, OPEN),
            )
            rows = await cur.fetchall()
        return [r[0] for r in rows]

    async def count_unclaimed(self) -> int:
        return await count(
            self._db,
            f"SELECT count(*) AS n FROM lats_runs WHERE {OPEN_SQL} AND awaiting IS NULL"
            " AND lease_until < now()",
            (),
        )
