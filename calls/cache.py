"""Memoised model calls. Keys are role + model identity (LangChain's llm string: model, its
parameters, bound tools and output schema) + the full message content, so a call on another
path of the tree never hits another path's answer. In memory by default; a SQLite file shares
it across processes on one host; Redis (app/backends/cache_redis.py) or Postgres
(app/backends/cache_postgres.py) across a deployment, when the service passes one to the engine."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, Generation

CACHE_HIT = "plantree_cache_hit"


# A run that asks for `use_cache=false` sets this to False around its tool calls: a tool's call
# then goes to the source (and refreshes the tools' result cache) instead of reading it.
USE_RESULT_CACHE: ContextVar[bool] = ContextVar("use_result_cache", default=True)


class CacheStore(Protocol):
    """Where cached replies live: text values under hashed keys."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None: ...

    def clear(self) -> None: ...


@runtime_checkable
class AsyncCacheStore(Protocol):
    """A store that also answers on the event loop (a network store with an asyncio client):
    `RoleCache` awaits it instead of running the synchronous calls in a thread."""

    async def aget(self, key: str) -> str | None: ...

    async def aput(self, key: str, value: str) -> None: ...


class MemoryStore:
    """An LRU dict for one process."""

    def __init__(self, max_entries: int = 20_000) -> None:
        self._data: OrderedDict[str, str] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class SqliteStore:
    """A SQLite file; several processes may share it (WAL)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, timeout=10)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS model_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._conn.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM model_cache WHERE key = ?", (key,)
            ).fetchone()
        return str(row[0]) if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO model_cache (key, value) VALUES (?, ?)", (key, value)
            )
            self._conn.commit()

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM model_cache")
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# Fields of a serialised message that say how a reply was made, not what it says: a reply
# served from the cache carries other usage (and, from a provider, other metadata) than the
# live one it stands for, and an earlier reply is part of every later prompt of its
# conversation (the executor's tool rounds).
_NOT_CONTENT = frozenset({"id", "usage_metadata", "response_metadata"})


def canonical_prompt(prompt: str) -> str:
    """The part of LangChain's serialised prompt (a JSON list of messages) that the reply
    depends on: each message without `_NOT_CONTENT`, keys sorted. Text that is not such a
    list is taken as it is."""
    try:
        messages = json.loads(prompt)
    except ValueError:
        return prompt
    if not isinstance(messages, list):
        return prompt
    kept = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("kwargs"), dict):
            fields = {k: v for k, v in message["kwargs"].items() if k not in _NOT_CONTENT}
            message = {**message, "kwargs": fields}
        kept.append(message)
    return json.dumps(kept, sort_keys=True)


def _encode(generations: Sequence[Generation]) -> str:
    items = []
    for gen in generations:
        if not isinstance(gen, ChatGeneration):
            raise TypeError("only chat generations are cached")
        items.append({"message": message_to_dict(gen.message), "info": gen.generation_info})
    return json.dumps(items)


def _decode(text: str) -> list[Generation]:
    out: list[Generation] = []
    for item in json.loads(text):
        message = messages_from_dict([item["message"]])[0]
        info = {**(item.get("info") or {}), CACHE_HIT: True}
        out.append(ChatGeneration(message=message, generation_info=info))
    return out


class RoleCache(BaseCache):
    """LangChain's cache interface over a `CacheStore`, namespaced by role. Replies it serves
    are marked, so the run's accounting counts a hit instead of a model call."""

    def __init__(self, store: CacheStore, role: str) -> None:
        self.store = store
        self.role = role

    def _key(self, prompt: str, llm_string: str) -> str:
        digest = hashlib.sha256()
        for part in (self.role, llm_string, canonical_prompt(prompt)):
            digest.update(part.encode())
            digest.update(b"\x00")
        return digest.hexdigest()

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        text = self.store.get(self._key(prompt, llm_string))
        return _decode(text) if text is not None else None

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        self.store.put(self._key(prompt, llm_string), _encode(return_val))

    def clear(self, **kwargs: Any) -> None:
        self.store.clear()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        text = await aget(self.store, self._key(prompt, llm_string))
        return _decode(text) if text is not None else None

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        await aput(self.store, self._key(prompt, llm_string), _encode(return_val))


# The memory store answers at once, an asynchronous store is awaited; only a file or a
# synchronous network store is worth a thread.
async def aget(store: CacheStore, key: str) -> str | None:
    """`store.get(key)` from the event loop."""
    if isinstance(store, MemoryStore):
        return store.get(key)
    if isinstance(store, AsyncCacheStore):
        return await store.aget(key)
    return await asyncio.to_thread(store.get, key)


async def aput(store: CacheStore, key: str, value: str) -> None:
    """`store.put(key, value)` from the event loop."""
    if isinstance(store, MemoryStore):
        store.put(key, value)
    elif isinstance(store, AsyncCacheStore):
        await store.aput(key, value)
    else:
        await asyncio.to_thread(store.put, key, value)
