"""Webhook deliveries on SQLite: how a run's delivery stands, kept on its row."""

from __future__ import annotations

import sqlite3

from app.store.base import WebhookDelivery
from app.store.reads import Part
from app.store.sqlite.db import SqliteDb


class SqliteDeliveries(Part[SqliteDb]):
    """`Deliveries` on SQLite."""

    async def record(self, run_id: str, delivery: WebhookDelivery) -> None:
        data = delivery.model_dump_json()

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE runs SET delivery = ? WHERE id = ?", (data, run_id))

        await self._db.write(write, "grow")
