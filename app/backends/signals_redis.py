"""Wake-ups between processes through Redis pub/sub (`LATS_REDIS_URL`), whatever the store.

Three channels: a run's new events (`…:events`, payload the run id), cancel requests
(`…:cancel`) and runs waiting for a worker (`…:queued`). Every message names its sender; a
process skips its own, which it delivered locally already. A publish happens after the store
write it announces has committed, from one background task that sends what piled up in one
pipeline (so a burst of events costs one round trip, and a writer never waits for Redis).

Like every signal, these only wake: the store stays the record. While Redis is unreachable,
followers re-read the store on every heartbeat, owners see cancel flags when they renew their
leases, workers sweep for claimable runs; on reconnecting, everything local is woken once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from app.runs.signals import LocalSignals

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "plantree:signals"
SUBSCRIBE_WAIT_S = 10.0
FLUSH_WAIT_S = 2.0
MAX_BATCH = 500


class RedisSignals(LocalSignals):
    """Publishes and receives wake-ups on Redis channels under `prefix`."""

    def __init__(self, url: str, prefix: str = DEFAULT_PREFIX) -> None:
        super().__init__()
        self._url = url
        self.events_channel = f"{prefix}:events"
        self.cancel_channel = f"{prefix}:cancel"
        self.queued_channel = f"{prefix}:queued"
        self._me = uuid.uuid4().hex[:12]
        self._outbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._subscribed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._client: Any = None
        self._publish_failing = False

    async def _open(self) -> None:
        import redis.asyncio as aioredis

        self._client = aioredis.Redis.from_url(self._url, socket_connect_timeout=5)
        self._tasks = [
            asyncio.create_task(self._listen(), name="lats-redis-listen"),
            asyncio.create_task(self._publish(), name="lats-redis-publish"),
        ]
        try:
            await asyncio.wait_for(self._subscribed.wait(), SUBSCRIBE_WAIT_S)
        except TimeoutError:
            # Not fatal: the store-side backstops keep every run correct, only slower.
            logger.warning("signals: redis not reachable yet; retrying in the background")

    async def close(self) -> None:
        with contextlib.suppress(TimeoutError):
            # What was announced before the stop (a drain's given-back runs) still goes out.
            await asyncio.wait_for(self._outbox.join(), FLUSH_WAIT_S)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()

    # -- sending -------------------------------------------------------------------------------
    def event_written(self, run_id: str) -> None:
        super().event_written(run_id)
        self._send(self.events_channel, run_id)

    def announce_queued(self) -> None:
        self.run_queued()
        self._send(self.queued_channel, "")

    async def publish_cancel(self, run_id: str) -> None:
        self.cancel_received(run_id)
        self._send(self.cancel_channel, run_id)

    def _send(self, channel: str, payload: str) -> None:
        self._outbox.put_nowait((channel, f"{self._me}|{payload}"))

    async def _publish(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while not self._outbox.empty() and len(batch) < MAX_BATCH:
                batch.append(self._outbox.get_nowait())
            try:
                async with self._client.pipeline(transaction=False) as pipe:
                    for channel, message in dict.fromkeys(batch):  # repeats wake no one more
                        pipe.publish(channel, message)
                    await pipe.execute()
                if self._publish_failing:
                    logger.info("signals: publishing to redis again")
                self._publish_failing = False
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if not self._publish_failing:
                    logger.warning("signals: cannot publish to redis (%s)", type(e).__name__)
                self._publish_failing = True
            finally:
                for _ in batch:
                    self._outbox.task_done()

    # -- receiving -----------------------------------------------------------------------------
    async def _listen(self) -> None:
        delay = 0.5
        channels = (self.events_channel, self.cancel_channel, self.queued_channel)
        while True:
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*channels)
                self._subscribed.set()
                self.wake_all()  # whatever happened while not subscribed
                delay = 0.5
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._dispatch(_text(message["channel"]), _text(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                logger.warning("signals: redis subscription lost (%s); reconnecting", e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    def _dispatch(self, channel: str, message: str) -> None:
        sender, _, payload = message.partition("|")
        if sender == self._me:
            return
        if channel == self.events_channel:
            self.event_written_elsewhere(payload)
        elif channel == self.cancel_channel:
            self.cancel_received(payload)
        elif channel == self.queued_channel:
            self.run_queued()

    def event_written_elsewhere(self, run_id: str) -> None:
        """Another process stored an event of `run_id`: wake the watchers here."""
        LocalSignals.event_written(self, run_id)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
