"""The tables both dialects create alike, written once: the same columns and keys, under each
dialect's table names (app/store/reads.py `Dialect`) and type names (`Types`). The runs and
passages tables, which differ, and every index are each dialect's own (its schema.py)."""

from __future__ import annotations

from dataclasses import dataclass

from app.store.reads import Dialect

_EVENTS = """CREATE TABLE IF NOT EXISTS {events} (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
)"""
_COMMANDS = """CREATE TABLE IF NOT EXISTS {commands} (
    run_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    command TEXT NOT NULL,
    node_id TEXT NOT NULL,
    step TEXT,
    sent_by TEXT,
    created_at {time} NOT NULL,
    PRIMARY KEY (run_id, id)
)"""
_THREADS = """CREATE TABLE IF NOT EXISTS {threads} (
    id TEXT PRIMARY KEY,
    tenant TEXT,
    created_at {time} NOT NULL
)"""
_COLLECTIONS = """CREATE TABLE IF NOT EXISTS {collections} (
    id TEXT PRIMARY KEY,
    tenant TEXT,
    name TEXT NOT NULL,
    created_at {time} NOT NULL
)"""
_DOCUMENTS = """CREATE TABLE IF NOT EXISTS {documents} (
    id TEXT PRIMARY KEY,
    collection_id TEXT NOT NULL,
    title TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    bytes {big} NOT NULL,
    pages INTEGER NOT NULL,
    passages INTEGER NOT NULL,
    created_at {time} NOT NULL
)"""
_ASSISTANTS = """CREATE TABLE IF NOT EXISTS {assistants} (
    id TEXT NOT NULL,
    tenant TEXT,
    name TEXT NOT NULL,
    description TEXT,
    params {json} NOT NULL,
    metadata {json} NOT NULL,
    version INTEGER NOT NULL,
    created_at {time} NOT NULL,
    updated_at {time} NOT NULL
)"""


@dataclass(frozen=True, slots=True)
class Types:
    """A dialect's names of the column types the dialects spell differently."""

    time: str  # a moment (SQLite keeps it as ISO text)
    json: str  # a JSON document (SQLite keeps it as text)
    big: str  # a 64-bit integer


@dataclass(frozen=True, slots=True)
class Tables:
    """One dialect's CREATE TABLE IF NOT EXISTS statements (without a closing semicolon) of
    the tables both create alike."""

    events: str
    commands: str
    threads: str
    collections: str
    documents: str
    assistants: str

    @classmethod
    def of(cls, dialect: Dialect, types: Types) -> Tables:
        names = {
            "events": dialect.events,
            "commands": dialect.commands,
            "threads": dialect.threads,
            "collections": dialect.collections,
            "documents": dialect.documents,
            "assistants": dialect.assistants,
            "time": types.time,
            "json": types.json,
            "big": types.big,
        }
        return cls(
            events=_EVENTS.format_map(names),
            commands=_COMMANDS.format_map(names),
            threads=_THREADS.format_map(names),
            collections=_COLLECTIONS.format_map(names),
            documents=_DOCUMENTS.format_map(names),
            assistants=_ASSISTANTS.format_map(names),
        )
