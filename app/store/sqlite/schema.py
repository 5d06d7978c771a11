"""The embedded store's tables, created (or brought up to date) when it opens, in the writer's
first transaction."""

from __future__ import annotations

import sqlite3

from app.store.sqlite.db import OPEN
from app.store.sqlite.events import end_run
from app.store.upgrade import TERMINAL, result_of_terminal

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
# Unfinished runs whose last event is terminal, with that event.
_LOGGED_ENDS = f"""
SELECT runs.id, events.type, events.data FROM runs JOIN events ON events.run_id = runs.id
WHERE {OPEN} AND events.type IN ({", ".join(f"'{t}'" for t in TERMINAL)})
  AND events.seq = (SELECT MAX(seq) FROM events WHERE run_id = runs.id)
"""


def migrate(conn: sqlite3.Connection) -> None:
    """The tables, their added columns and indexes, and the ends of runs logged without
    their status. Idempotent."""
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
        end_run(conn, row["id"], result)
