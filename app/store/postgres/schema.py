"""The Postgres store's tables, created (or brought up to date) when it opens: in one
transaction, under an advisory lock, so that processes starting together do not race."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from psycopg import AsyncConnection

from app.store.postgres.db import OPEN, PostgresDb, jsonb
from app.store.tables import Tables, Types
from app.store.upgrade import TERMINAL, result_of_terminal

# `{events}` and the like: the tables both dialects create alike (app/store/tables.py).
_SCHEMA_TEMPLATE = """
SELECT pg_advisory_xact_lock(hashtext('lats_schema'));
CREATE TABLE IF NOT EXISTS lats_runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params JSONB NOT NULL,
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    result JSONB
);
{added_columns}CREATE INDEX IF NOT EXISTS lats_runs_tenant ON lats_runs (tenant, created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_created ON lats_runs (created_at DESC);
CREATE INDEX IF NOT EXISTS lats_runs_status ON lats_runs (status, created_at DESC);
{commands};
{threads};
CREATE INDEX IF NOT EXISTS lats_runs_thread ON lats_runs (thread_id, created_at);
{events};
{collections};
CREATE UNIQUE INDEX IF NOT EXISTS lats_collections_name
    ON lats_collections ((COALESCE(tenant, '')), name);
CREATE INDEX IF NOT EXISTS lats_collections_tenant ON lats_collections (tenant, created_at DESC);
{documents};
CREATE UNIQUE INDEX IF NOT EXISTS lats_documents_content ON lats_documents (collection_id, sha256);
CREATE INDEX IF NOT EXISTS lats_documents_listed
    ON lats_documents (collection_id, created_at DESC);
-- A document's passages (page 0: a document without pages), each with its words as the
-- `english` configuration reads them (stemmed, stop words left out, as the in-memory bm25s
-- index of tools/corpus_index.py reads them), kept by Postgres itself (a generated column),
-- indexed for `@@`.
CREATE TABLE IF NOT EXISTS lats_passages (
    document_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    number INTEGER NOT NULL,
    heading TEXT,
    text TEXT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (document_id, page, number)
);
CREATE INDEX IF NOT EXISTS lats_passages_tsv ON lats_passages USING GIN (tsv);
CREATE INDEX IF NOT EXISTS lats_passages_collection ON lats_passages (collection_id);
-- A tenant's assistants (app/store/assistant_base.py): an id is unique within its tenant.
{assistants};
CREATE UNIQUE INDEX IF NOT EXISTS lats_assistants_id
    ON lats_assistants ((COALESCE(tenant, '')), id);
CREATE INDEX IF NOT EXISTS lats_assistants_listed ON lats_assistants (tenant, created_at DESC);
"""
# Databases made before leases (or tenants, take-over counts, threads) existed get the columns
# added in place: a column each, with the ALTER TABLEs it takes, keyed by the column that tells.
_ADDED_COLUMNS = {
    "cancel_requested": (
        "owner TEXT",
        "lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch'",
        "cancel_requested BOOLEAN NOT NULL DEFAULT false",
    ),
    "tenant": ("tenant TEXT",),
    "takeovers": ("takeovers INTEGER NOT NULL DEFAULT 0",),
    "thread_id": ("thread_id TEXT",),
    "awaiting": ("awaiting TEXT", "answer JSONB"),
    "webhook": ("webhook TEXT", "delivery JSONB"),
}
# ALTER TABLE locks the table exclusively even when the column exists, and would queue behind
# every open transaction of the processes already running: only when the column is missing.
_ADD_IF_MISSING = """
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'lats_runs'
          AND column_name = '{column}'
    ) THEN
{alters}
    END IF;"""


def _add_missing_columns() -> str:
    """A DO block adding each missing column of `_ADDED_COLUMNS`."""
    blocks = []
    for column, adds in _ADDED_COLUMNS.items():
        alters = [f"        ALTER TABLE lats_runs ADD COLUMN IF NOT EXISTS {add};" for add in adds]
        blocks.append(_ADD_IF_MISSING.format(column=column, alters="\n".join(alters)))
    return "DO $$\nBEGIN{}\nEND\n$$;\n".format("".join(blocks))


_TABLES = Tables.of(PostgresDb.dialect, Types(time="TIMESTAMPTZ", json="JSONB", big="BIGINT"))
_SCHEMA = _SCHEMA_TEMPLATE.format(added_columns=_add_missing_columns(), **asdict(_TABLES))
# Unfinished runs whose last event is terminal, with that event.
_LOGGED_ENDS = (
    "SELECT r.id, e.type, e.data FROM lats_runs r JOIN lats_events e ON e.run_id = r.id"
    " WHERE r.status = ANY(%s) AND e.type = ANY(%s)"
    " AND e.seq = (SELECT MAX(seq) FROM lats_events WHERE run_id = r.id)"
)
_SETTLE = (
    "UPDATE lats_runs SET status = %s, updated_at = now(), result = %s, owner = NULL,"
    " lease_until = 'epoch' WHERE id = %s AND status = ANY(%s)"
)


async def migrate(conn: AsyncConnection[Any]) -> None:
    """The tables, their added columns and indexes, and the ends of runs logged without their
    status, in one transaction. Idempotent."""
    async with conn.transaction():
        await conn.execute(_SCHEMA)
        await _end_logged_runs(conn)


async def _end_logged_runs(conn: AsyncConnection[Any]) -> None:
    """Give each unfinished run whose terminal event is stored the status and result it
    stands for (a database written before the end was one statement). Idempotent; run in
    the schema's transaction, under its lock."""
    cur = await conn.execute(_LOGGED_ENDS, (OPEN, list(TERMINAL)))
    for run_id, type_, data in await cur.fetchall():
        result = result_of_terminal(run_id, type_, data)
        await conn.execute(_SETTLE, (result.status, jsonb(result), run_id, OPEN))
