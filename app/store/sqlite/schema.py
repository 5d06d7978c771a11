"""The embedded store's tables, created (or brought up to date) when it opens, in the writer's
first transaction."""

from __future__ import annotations

import logging
import sqlite3

from app.store.passage_index import reindex
from app.store.sqlite.db import INDEX, OPEN, SqliteDb, run_plan
from app.store.sqlite.events import end_run
from app.store.tables import Tables, Types
from app.store.upgrade import TERMINAL, result_of_terminal

# The tables both dialects create alike (app/store/tables.py) in this one's type names.
_TABLES = Tables.of(SqliteDb.dialect, Types(time="TEXT", json="TEXT", big="INTEGER"))
logger = logging.getLogger(__name__)
_RUNS = """CREATE TABLE IF NOT EXISTS runs (
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
)"""
_SCHEMA = (
    _RUNS,
    "CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC)",
    "CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at DESC)",
    _TABLES.events,
    _TABLES.commands,
    _TABLES.threads,
)
# A tenant's document collections (app/store/collection_base.py). A passage's page is 0 in a
# document without pages. The full-text index's tables (app/store/passage_index.py) are written
# in the same transaction as the passages they index; a word's postings are kept in its key
# range best first (WITHOUT ROWID: the key is the row).
_COLLECTIONS = (
    _TABLES.collections,
    "CREATE UNIQUE INDEX IF NOT EXISTS collections_name ON collections (IFNULL(tenant, ''), name)",
    "CREATE INDEX IF NOT EXISTS collections_tenant ON collections (tenant, created_at DESC)",
    _TABLES.documents,
    "CREATE UNIQUE INDEX IF NOT EXISTS documents_content ON documents (collection_id, sha256)",
    "CREATE INDEX IF NOT EXISTS documents_listed ON documents (collection_id, created_at DESC)",
    """CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    number INTEGER NOT NULL,
    heading TEXT,
    text TEXT NOT NULL
)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS passages_id ON passages (document_id, page, number)",
    "CREATE INDEX IF NOT EXISTS passages_collection ON passages (collection_id)",
    """CREATE TABLE IF NOT EXISTS index_sizes (
    collection_id TEXT PRIMARY KEY,
    passages INTEGER NOT NULL,
    length INTEGER NOT NULL,
    fresh INTEGER NOT NULL
) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS index_words (
    id INTEGER PRIMARY KEY,
    collection_id TEXT NOT NULL,
    word TEXT NOT NULL,
    passages INTEGER NOT NULL
)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS index_words_word ON index_words (collection_id, word)",
    """CREATE TABLE IF NOT EXISTS index_postings (
    word_id INTEGER NOT NULL,
    weight REAL NOT NULL,
    passage_id INTEGER NOT NULL,
    PRIMARY KEY (word_id, weight DESC, passage_id DESC)
) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS index_fresh (
    word_id INTEGER NOT NULL,
    weight REAL NOT NULL,
    passage_id INTEGER NOT NULL,
    PRIMARY KEY (word_id, weight DESC, passage_id DESC)
) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS index_passages (
    passage_id INTEGER PRIMARY KEY,
    collection_id TEXT NOT NULL,
    length INTEGER NOT NULL,
    average REAL NOT NULL,
    words BLOB NOT NULL,
    counts BLOB NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS index_passages_collection ON index_passages (collection_id)",
)
# Files written before that index held SQLite's FTS5 index of the passages (and the triggers that
# kept it): dropped, and their passages indexed anew (`migrate`).
_FTS5 = (
    "DROP TRIGGER IF EXISTS passages_indexed",
    "DROP TRIGGER IF EXISTS passages_unindexed",
    "DROP TABLE IF EXISTS passages_fts",
)
# A tenant's assistants (app/store/assistant_base.py): an id is unique within its tenant.
_ASSISTANTS = (
    _TABLES.assistants,
    "CREATE UNIQUE INDEX IF NOT EXISTS assistants_id ON assistants (IFNULL(tenant, ''), id)",
    "CREATE INDEX IF NOT EXISTS assistants_listed ON assistants (tenant, created_at DESC)",
)
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
# Unfinished runs whose last event is terminal, with that event.
_LOGGED_ENDS = f"""
SELECT runs.id, events.type, events.data FROM runs JOIN events ON events.run_id = runs.id
WHERE {OPEN} AND events.type IN ({", ".join(f"'{t}'" for t in TERMINAL)})
  AND events.seq = (SELECT MAX(seq) FROM events WHERE run_id = runs.id)
"""


def migrate(conn: sqlite3.Connection) -> None:
    """The tables (the collections' with their full-text index, the assistants'), their added
    columns and indexes, the passages the index lacks indexed, and the ends of runs logged
    without their status. Idempotent."""
    for statement in _SCHEMA:
        conn.execute(statement)
    have = {row["name"] for row in conn.execute("PRAGMA table_info(runs)").fetchall()}
    for name, kind in _ADDED_COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    conn.execute(_TENANT_INDEX)
    conn.execute(_THREAD_INDEX)
    for statement in (*_COLLECTIONS, *_ASSISTANTS, *_FTS5):
        conn.execute(statement)
    indexed = run_plan(conn, reindex(INDEX))
    if indexed:
        logger.info("store: %d documents' passages indexed", indexed)
    _end_logged_runs(conn)


def _end_logged_runs(conn: sqlite3.Connection) -> None:
    """Give each unfinished run whose terminal event is stored the status and result it
    stands for (a file written before the end was one transaction). Idempotent."""
    for row in conn.execute(_LOGGED_ENDS).fetchall():
        result = result_of_terminal(row["id"], row["type"], row["data"])
        end_run(conn, row["id"], result)
