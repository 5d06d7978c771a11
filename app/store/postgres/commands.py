"""Steering commands on Postgres, numbered per run under the run's row lock."""

from __future__ import annotations

from app.store.postgres.db import COMMAND_CHANNEL, OPEN, PostgresDb
from app.store.reads import CommandReads

# A steering command of an open run, numbered after its others (the run's row lock orders
# two commands sent at once): its id, or no row.
_ADD_COMMAND = (
    "WITH held AS (SELECT id FROM lats_runs WHERE id = %(run)s AND status = ANY(%(open)s)"
    " FOR UPDATE)"
    " INSERT INTO lats_commands (run_id, id, command, node_id, step, sent_by, created_at)"
    " SELECT id, (SELECT COALESCE(MAX(id), 0) + 1 FROM lats_commands WHERE run_id = %(run)s),"
    " %(command)s, %(node)s, %(step)s, %(by)s, now() FROM held RETURNING id"
)


class PostgresCommands(CommandReads[PostgresDb]):
    """`Commands` on Postgres."""

    async def add(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        args = {
            "run": run_id,
            "open": OPEN,
            "command": command,
            "node": node_id,
            "step": step,
            "by": by,
        }
        async with self._db.connection() as conn, self._db.notifying(conn):
            cur = await conn.execute(_ADD_COMMAND, args)
            row = await cur.fetchone()
            if row is not None:
                await self._db.send(conn, COMMAND_CHANNEL, run_id)
        return int(row[0]) if row else None
