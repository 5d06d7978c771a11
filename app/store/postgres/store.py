"""The Postgres store, for deployments that outgrow the embedded file (several processes): its
parts on one connection pool (app/store/postgres/db.py)."""

from __future__ import annotations

from app.store import pg_check
from app.store.collection_base import CollectionLimits
from app.store.postgres.assistants import PostgresAssistants
from app.store.postgres.collections import PostgresCollections
from app.store.postgres.commands import PostgresCommands
from app.store.postgres.db import POOL_TIMEOUT_S, PostgresDb
from app.store.postgres.deliveries import PostgresDeliveries
from app.store.postgres.events import PostgresEvents
from app.store.postgres.leases import PostgresLeases
from app.store.postgres.runs import PostgresRuns
from app.store.postgres.schema import migrate
from app.store.postgres.threads import PostgresThreads
from app.store.postgres.waits import PostgresWaits


class PostgresRunStore:
    """`RunStore` on Postgres through a connection pool."""

    def __init__(self, db: PostgresDb, collection_limits: CollectionLimits | None = None) -> None:
        self._db = db
        self.runs = PostgresRuns(db)
        self.events = PostgresEvents(db)
        self.leases = PostgresLeases(db)
        self.waits = PostgresWaits(db)
        self.commands = PostgresCommands(db)
        self.threads = PostgresThreads(db)
        self.deliveries = PostgresDeliveries(db)
        self.collections = PostgresCollections(db, collection_limits)
        self.assistants = PostgresAssistants(db)

    @classmethod
    async def open(
        cls, url: str, *, notify: bool = True, collection_limits: CollectionLimits | None = None
    ) -> PostgresRunStore:
        """The store in the database at `url`, its tables brought up to date; its writes send
        NOTIFYs unless another channel (Redis) carries the wake-ups (`notify` off); its
        collections held to `collection_limits` (the defaults without)."""
        # A connection a database restart closed is replaced before it is handed out, so the
        # first request after a restart does not fail on it, and a database that was away is
        # retried every second (app/store/pg_check.py).
        pool = pg_check.ReconnectingPool(
            url,
            min_size=1,
            max_size=10,
            open=False,
            timeout=POOL_TIMEOUT_S,
            kwargs={"autocommit": True, "connect_timeout": 5},
        )
        await pool.open(wait=True, timeout=10)
        async with pool.connection() as conn:
            await migrate(conn)
        return cls(PostgresDb(pool, notify=notify), collection_limits)

    async def ping(self) -> None:
        await self._db.one("SELECT 1 AS n", ())

    async def close(self) -> None:
        await self._db.close()
