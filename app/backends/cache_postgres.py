"""The model-call cache in Postgres, shared by every process of a deployment without Redis.

A `CacheStore` (calls/cache.py) over one table, `lats_model_cache`. Entries older than
`ttl_s` are deleted now and then by the writers. The calls are synchronous: `RoleCache` runs
them in a thread. When the database cannot be reached, lookups miss and writes are dropped
(the model answers instead), and the store says so once.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_TTL_S = 7 * 24 * 3600
PRUNE_EVERY = 1000  # writes between two deletions of expired entries

_SCHEMA = """
SELECT pg_advisory_xact_lock(hashtext('lats_model_cache'));
CREATE TABLE IF NOT EXISTS lats_model_cache (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    written_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS lats_model_cache_written ON lats_model_cache (written_at);
"""


class PostgresCacheStore:
    """Cached replies in a Postgres table, through a small connection pool."""

    def __init__(self, url: str, *, ttl_s: int = DEFAULT_TTL_S, max_connections: int = 4) -> None:
        from app.store import pg_check

        self._pool: Any = pg_check.ReconnectingSyncPool(
            url,
            min_size=1,
            max_size=max_connections,
            timeout=5,
            kwargs={"autocommit": True},
            open=True,
        )
        self._ttl_s = ttl_s
        self._writes = 0
        self._failing = False
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(_SCHEMA)

    def _failed(self, e: Exception) -> None:
        if not self._failing:
            logger.warning("model cache: database unreachable (%s); calling the model", e)
        self._failing = True

    def get(self, key: str) -> str | None:
        try:
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT value FROM lats_model_cache WHERE key = %s", (key,)
                ).fetchone()
        except Exception as e:
            self._failed(e)
            return None
        self._failing = False
        return str(row[0]) if row else None

    def put(self, key: str, value: str) -> None:
        self._writes += 1
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    "INSERT INTO lats_model_cache (key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, written_at = now()",
                    (key, value),
                )
                if self._writes % PRUNE_EVERY == 0:
                    conn.execute(
                        "DELETE FROM lats_model_cache"
                        " WHERE written_at < now() - make_interval(secs => %s)",
                        (self._ttl_s,),
                    )
        except Exception as e:
            self._failed(e)

    def clear(self) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM lats_model_cache")

    def close(self) -> None:
        self._pool.close()
