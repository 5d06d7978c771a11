"""Webhook deliveries on Postgres: how a run's delivery stands, kept on its row."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from app.store.base import WebhookDelivery
from app.store.postgres.db import PostgresDb
from app.store.reads import Part


class PostgresDeliveries(Part[PostgresDb]):
    """`Deliveries` on Postgres."""

    async def record(self, run_id: str, delivery: WebhookDelivery) -> None:
        async with self._db.unbounded() as conn:
            await conn.execute(
                "UPDATE lats_runs SET delivery = %s WHERE id = %s",
                (Jsonb(delivery.model_dump(mode="json")), run_id),
            )
