"""The process's webhook deliveries: when a run held here ends, its end is POSTed to the run's
webhook in a task of its own, so the run's end never waits for the receiver.

Whichever process stores a run's end (the worker that ran it, or the process that ended a
run nobody held) delivers it. The delivery's id is the run's (`webhook-id` is the same on every
attempt, so a receiver can drop repeats), and its state after every attempt is stored with
the run (`delivery`). A delivery still going on when its process stops is cut short, with
its last state stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime

import httpx

from app.keys.signing import secret_key
from app.settings import Settings
from app.store.base import RunRecord, WebhookDelivery
from app.store.protocols import RunStore
from app.webhooks.delivery import DeliveryPolicy, WebhookSender

logger = logging.getLogger(__name__)

EVENT_TYPE = "run.ended"


def webhook_id(run_id: str) -> str:
    """The `webhook-id` of the delivery of a run's end."""
    return f"msg_{run_id}"


def payload(record: RunRecord) -> bytes:
    """The body: `{type, timestamp, data}` as Standard Webhooks suggests; `data` is the run as
    `GET /runs/{id}` shows it, without its tree."""
    data = {
        "run_id": record.id,
        "status": record.status,
        "thread_id": record.thread_id,
        "task": record.task,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "url": f"/runs/{record.id}",
        **{name: _plain(value) for name, value in record.answer_fields().items()},
    }
    body = {"type": EVENT_TYPE, "timestamp": datetime.now(UTC).isoformat(), "data": data}
    return json.dumps(body, separators=(",", ":"), default=str).encode()


def _plain(value: object) -> object:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


class WebhookNotifier:
    """Starts a delivery task per ended run that asked for a webhook; `sender` is None when
    the server has no webhook secret (then no run was given a webhook here)."""

    def __init__(self, store: RunStore, sender: WebhookSender | None) -> None:
        self._store = store
        self._sender = sender
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def from_settings(cls, store: RunStore, settings: Settings) -> WebhookNotifier:
        """The notifier of a process: its own HTTP client, never following redirects."""
        if settings.webhook_secret is None:
            return cls(store, None)
        policy = DeliveryPolicy(
            timeout_s=settings.webhook_timeout_s,
            max_attempts=settings.webhook_max_attempts,
            retry_base_s=settings.webhook_retry_base_s,
            allow_private=settings.webhook_allow_private,
        )
        key = secret_key(settings.webhook_secret.get_secret_value())
        client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return cls(store, WebhookSender(key=key, policy=policy, client=client))

    def run_ended(self, run_id: str) -> None:
        """The run's end was stored here: deliver it, if it asked for a webhook, in the
        background. Without a secret nothing is read: no run of this deployment has one (every
        process of a deployment that ends runs needs the same `LATS_WEBHOOK_SECRET`)."""
        if self._sender is None:
            return
        task = asyncio.get_running_loop().create_task(self._deliver(run_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, run_id: str) -> None:
        try:
            record = await self._store.runs.get(run_id)
            if record is None or record.webhook is None or self._sender is None:
                return
            if record.delivery is not None and record.delivery.state != "delivering":
                return  # its end was delivered (or given up) already

            async def report(delivery: WebhookDelivery) -> None:
                await self._store.deliveries.record(run_id, delivery)

            await self._sender.deliver(
                record.webhook, webhook_id(run_id), payload(record), report, run_id=run_id
            )
        except Exception:
            logger.exception("run=%s webhook delivery failed", run_id)

    async def wait_idle(self) -> None:
        """Until every delivery started so far has ended (tests, and a drain)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self, grace_s: float) -> None:
        """Give deliveries in flight `grace_s` to end, cancel the rest, close the client."""
        if self._tasks:
            _, pending = await asyncio.wait(list(self._tasks), timeout=grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._sender is not None:
            await self._sender.client.aclose()
