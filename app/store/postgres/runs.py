"""Runs as records on Postgres: a run stored with its first event in one statement (a tenant's
limit counted under the tenant's lock in the same transaction), and finished runs deleted with
their events and commands in one statement."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from app.store.base import FINISHED, Lease, RunRecord, TooManyOpen
from app.store.postgres.db import OPEN, QUEUED_CHANNEL, PostgresDb
from app.store.reads import RunReads

_CREATE = (
    "INSERT INTO lats_runs (id, task, params, status, created_at, updated_at, owner,"
    " lease_until, tenant, thread_id, webhook) VALUES (%(run)s, %(task)s, %(params)s,"
    " %(status)s, %(created)s, %(updated)s, %(owner)s, CASE WHEN %(owner)s::text IS NULL THEN"
    " 'epoch'::timestamptz ELSE now() + make_interval(secs => %(ttl)s) END, %(tenant)s,"
    " %(thread)s, %(webhook)s)"
)
_CREATE_STARTED = (
    f"WITH run AS ({_CREATE} RETURNING id)"
    " INSERT INTO lats_events (run_id, seq, type, data) SELECT id, 1, 'run_started', %(data)s"
    " FROM run"
)
# A transaction-scoped advisory lock per tenant (its own key space: the first argument).
_TENANT_LOCK = "SELECT pg_advisory_xact_lock(7461, hashtext(%s))"
_COUNT_OPEN = (
    "SELECT count(*) FROM lats_runs WHERE tenant IS NOT DISTINCT FROM %s AND status = ANY(%s)"
)
# Finished runs deleted with their events, among the runs `{pick}` selects.
_DELETE = (
    "WITH gone AS (DELETE FROM lats_runs WHERE id IN ({pick}) AND status = ANY(%(ended)s)"
    " RETURNING id), events AS (DELETE FROM lats_events WHERE run_id IN (SELECT id FROM gone)),"
    " commands AS (DELETE FROM lats_commands WHERE run_id IN (SELECT id FROM gone))"
    " SELECT count(*) FROM gone"
)


class PostgresRuns(RunReads[PostgresDb]):
    """`RunRecords` on Postgres."""

    async def create(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        owner = lease.owner if lease is not None else None
        args = {
            "run": record.id,
            "task": record.task,
            "params": Jsonb(record.params.model_dump(mode="json")),
            "status": record.status,
            "created": record.created_at,
            "updated": record.updated_at,
            "owner": owner,
            "ttl": lease.ttl_s if lease is not None else 0.0,
            "tenant": record.tenant,
            "thread": record.thread_id,
            "webhook": record.webhook,
            "data": started,
        }
        limited = max_open is not None
        async with (
            self._db.connection() as conn,
            conn.transaction() if limited else self._db.notifying(conn),
        ):
            if max_open is not None:
                await _below_open_limit(conn, record.tenant, max_open)
            await conn.execute(_CREATE if started is None else _CREATE_STARTED, args)
            if owner is None:
                await self._db.send(conn, QUEUED_CHANNEL, record.id)

    async def delete(self, run_id: str) -> bool:
        return await self._delete("%(run)s", {"run": run_id}) == 1

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        pick = (
            "SELECT id FROM lats_runs WHERE status = ANY(%(ended)s) AND updated_at < %(cutoff)s"
            " LIMIT %(limit)s"
        )
        return await self._delete(pick, {"cutoff": cutoff, "limit": limit})

    async def _delete(self, pick: str, args: dict[str, Any]) -> int:
        async with self._db.connection() as conn:
            cur = await conn.execute(_DELETE.format(pick=pick), {**args, "ended": list(FINISHED)})
            row = await cur.fetchone()
        return int(row[0]) if row else 0


async def _below_open_limit(conn: AsyncConnection[Any], tenant: str | None, max_open: int) -> None:
    """Inside the creating transaction: hold the tenant's lock until it commits (creations of
    one tenant queue here), then count; raises `TooManyOpen` at the limit. The count is a
    statement of its own so that it sees every creation committed before the lock."""
    await conn.execute(_TENANT_LOCK, (tenant or "",))
    cur = await conn.execute(_COUNT_OPEN, (tenant, OPEN))
    row = await cur.fetchone()
    if row is not None and row[0] >= max_open:
        raise TooManyOpen(max_open)
