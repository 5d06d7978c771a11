"""What `lats migrate` copies, one kind of unit per entry of `COLLECTIONS`: each unit is read
whole from one side, digested, and written whole to the other.

A run's unit is its record, its events in order and its LangGraph checkpoints (thread id = run
id) with their pending writes. Checkpoints go through the savers' own API (`alist`, `aput`,
`aput_writes`), so each store keeps them in its own format. A thread's unit is its record, and
so is an assistant's; a document collection's, its record with its documents and their
passages. A run's steering
commands are not copied: those it took are in its events. A side's tables are read and written
in bulk through its `RunTables` (app/store/migrate_tables.py has both dialects').
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from app.store.base import RunRecord, StoredEvent, ThreadRecord
from app.store.migrate_assistants import AssistantTables
from app.store.migrate_collections import CollectionTables
from app.store.protocols import RunStore
from app.store.saver_guard import GuardedWrites


class RunTables(Protocol):
    """The bulk side of one store's run tables, and of its collection tables on the same
    connection (`collections`)."""

    @property
    def collections(self) -> CollectionTables: ...

    @property
    def assistants(self) -> AssistantTables: ...

    async def run_ids(self, after: str, limit: int) -> list[str]:
        """Up to `limit` run ids greater than `after`, in order."""

    async def write_run(self, record: RunRecord, events: list[StoredEvent]) -> None:
        """Replace the run `record.id` (row and events) by these, in one transaction; the
        lease is left free (no owner)."""

    async def thread_ids(self, after: str, limit: int) -> list[str]:
        """Up to `limit` thread ids greater than `after`, in order."""

    async def write_thread(self, thread: ThreadRecord) -> None:
        """Replace the thread `thread.id` by this one."""

    async def counts(self) -> dict[str, int]:
        """Rows per table: `runs`, `events`, `threads`, `collections`, `documents`,
        `passages`, `assistants`."""

    async def ledger(self, kind: str, keys: list[str]) -> dict[str, str]:
        """Of `keys`, those a migration wrote here, with the source it named."""

    async def mark(self, kind: str, key: str, source: str) -> None:
        """Record that a migration from `source` writes `key` here (before it does)."""

    async def close(self) -> None: ...


@dataclass
class Side:
    """One end of a migration: a store opened as the service opens it, plus its tables' bulk
    access."""

    identity: str  # the same store however it is spelled, never with a password
    store: RunStore
    saver: GuardedWrites
    tables: RunTables


@dataclass(frozen=True)
class Unit:
    """One thing copied whole: its key, its digest, how many rows of each table it holds."""

    key: str
    digest: str
    counts: dict[str, int]
    content: Any = field(repr=False)


class Collection(Protocol):
    """One kind of unit: how to list, read and write it on any side."""

    kind: str
    tables: tuple[str, ...]  # the tables its units' `counts` name

    async def keys(self, side: Side, after: str, limit: int) -> list[str]:
        """Up to `limit` keys greater than `after`, in order."""

    async def read(self, side: Side, key: str) -> Unit | None:
        """The unit `key` as `side` holds it, or None."""

    async def write(self, side: Side, unit: Unit) -> None:
        """Replace whatever `side` holds under `unit.key` by `unit` (idempotent)."""


_SERDE = JsonPlusSerializer()


def _plain(value: Any) -> Any:
    """`json.dumps`' fallback for what a checkpoint may hold beyond JSON."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, set | frozenset):
        return sorted(repr(v) for v in value)
    kind, data = _SERDE.dumps_typed(value)
    return [kind, data.hex()]


def digest(content: Any) -> str:
    """sha256 of `content` as canonical JSON (keys sorted)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RunContent:
    record: RunRecord
    events: list[StoredEvent]
    checkpoints: list[CheckpointTuple]


def _record_fields(record: RunRecord) -> dict[str, Any]:
    # The owner is left out: a copy's lease is always free. Times in UTC: Postgres answers in
    # the session's time zone.
    fields = record.model_copy(
        update={
            "created_at": record.created_at.astimezone(UTC),
            "updated_at": record.updated_at.astimezone(UTC),
        }
    )
    return fields.model_dump(mode="json", exclude={"owner"})


def _ns(config: RunnableConfig | None) -> str:
    return str((config or {}).get("configurable", {}).get("checkpoint_ns", ""))


def _checkpoint_id(config: RunnableConfig | None) -> str | None:
    value = (config or {}).get("configurable", {}).get("checkpoint_id")
    return str(value) if value is not None else None


def _writes(t: CheckpointTuple) -> list[tuple[str, str, Any]]:
    # By task, in each task's own order (stable sort): savers list them in different orders.
    return sorted(t.pending_writes or [], key=lambda w: w[0])


def _checkpoint_fields(t: CheckpointTuple) -> dict[str, Any]:
    return {
        "ns": _ns(t.config),
        "parent": _checkpoint_id(t.parent_config),
        "checkpoint": dict(t.checkpoint),
        "metadata": dict(t.metadata),
        "writes": [list(w) for w in _writes(t)],
    }


class Runs:
    """Runs with their events and checkpoints."""

    kind: str = "run"
    tables: tuple[str, ...] = ("runs", "events", "checkpoints", "checkpoint_writes")

    async def keys(self, side: Side, after: str, limit: int) -> list[str]:
        return await side.tables.run_ids(after, limit)

    async def read(self, side: Side, key: str) -> Unit | None:
        record = await side.store.runs.get(key)
        if record is None:
            return None
        events = await side.store.events.after(key, 0)
        thread = RunnableConfig(configurable={"thread_id": key})
        checkpoints = [t async for t in side.saver.alist(thread)]
        checkpoints.sort(key=lambda t: (_ns(t.config), t.checkpoint["id"]))
        content = RunContent(record, events, checkpoints)
        fields = {
            "run": _record_fields(record),
            "events": [[e.seq, e.type, e.data] for e in events],
            "checkpoints": [_checkpoint_fields(t) for t in checkpoints],
        }
        counts = {
            "runs": 1,
            "events": len(events),
            "checkpoints": len(checkpoints),
            "checkpoint_writes": sum(len(t.pending_writes or []) for t in checkpoints),
        }
        return Unit(key=key, digest=digest(fields), counts=counts, content=content)

    async def write(self, side: Side, unit: Unit) -> None:
        content: RunContent = unit.content
        # Checkpoints first, the run last and in one transaction: a run present on the target
        # has all of its checkpoints there.
        await side.saver.adelete_thread(unit.key)
        for t in content.checkpoints:
            await _put(side.saver, unit.key, t)
        await side.tables.write_run(content.record, content.events)


def _one_row(key: str, record: BaseModel | None, table: str) -> Unit | None:
    """The unit of a record that is one row of `table`, digested as its fields (None: none)."""
    if record is None:
        return None
    fields = record.model_dump(mode="json")
    return Unit(key=key, digest=digest(fields), counts={table: 1}, content=record)


async def _put(saver: GuardedWrites, thread_id: str, t: CheckpointTuple) -> None:
    ns = _ns(t.config)
    parent = RunnableConfig(configurable={"thread_id": thread_id, "checkpoint_ns": ns})
    if (parent_id := _checkpoint_id(t.parent_config)) is not None:
        parent["configurable"]["checkpoint_id"] = parent_id
    stored = await saver.acopy(parent, t.checkpoint, t.metadata)
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in _writes(t):
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        await saver.acopy_writes(stored, writes, task_id)


class Threads:
    """Threads (their runs name them: a run's unit carries its thread id)."""

    kind: str = "thread"
    tables: tuple[str, ...] = ("threads",)

    async def keys(self, side: Side, after: str, limit: int) -> list[str]:
        return await side.tables.thread_ids(after, limit)

    async def read(self, side: Side, key: str) -> Unit | None:
        thread = await side.store.threads.get(key)
        if thread is not None:
            thread = thread.model_copy(update={"created_at": thread.created_at.astimezone(UTC)})
        return _one_row(key, thread, "threads")

    async def write(self, side: Side, unit: Unit) -> None:
        await side.tables.write_thread(unit.content)


class DocumentCollections:
    """A tenant's document collections, each with its documents and their passages (the
    target's full-text index follows the passages written)."""

    kind: str = "collection"
    tables: tuple[str, ...] = ("collections", "documents", "passages")

    async def keys(self, side: Side, after: str, limit: int) -> list[str]:
        return await side.tables.collections.ids(after, limit)

    async def read(self, side: Side, key: str) -> Unit | None:
        content = await side.tables.collections.read(key)
        if content is None:
            return None
        counts = {
            "collections": 1,
            "documents": len(content.documents),
            "passages": len(content.passages),
        }
        return Unit(key=key, digest=digest(content.fields()), counts=counts, content=content)

    async def write(self, side: Side, unit: Unit) -> None:
        await side.tables.collections.write(unit.content)


class Assistants:
    """A tenant's assistants (their keys name the tenant: app/store/migrate_assistants.py)."""

    kind: str = "assistant"
    tables: tuple[str, ...] = ("assistants",)

    async def keys(self, side: Side, after: str, limit: int) -> list[str]:
        return await side.tables.assistants.keys(after, limit)

    async def read(self, side: Side, key: str) -> Unit | None:
        return _one_row(key, await side.tables.assistants.read(key), "assistants")

    async def write(self, side: Side, unit: Unit) -> None:
        await side.tables.assistants.write(unit.content)


COLLECTIONS: tuple[Collection, ...] = (Threads(), Runs(), DocumentCollections(), Assistants())


def sum_counts(into: dict[str, int], unit: Unit | None) -> None:
    if unit is not None:
        for table, n in unit.counts.items():
            into[table] = into.get(table, 0) + n
