"""Wake-ups between processes through Redis pub/sub (`LATS_REDIS_URL`), whatever the store.

Four channels: a run's new events (`…:events`, payload the run id), cancel requests
(`…:cancel`), steering commands sent (`…:command`, the run id) and runs waiting for a worker
(`…:queued`). Every message names its sender; a
process skips its own, which it delivered locally already. A publish happens after the store
write it announces has committed, from one background task that sends what piled up in one
pipeline (so a burst of events costs one round trip, and a writer never waits for Redis).

Like every signal, these only wake: the store stays the record. Publishing and subscribing go
through the process's Redis adapter (app/backends/redis.py). While Redis is down, what would
have been published is dropped at once, followers re-read the store on every heartbeat, owners
see cancel flags when they renew their leases, workers sweep for claimable runs; the listener
subscribes again when the adapter's outage policy lets a call through (its backoff), and on
subscribing everything local is woken once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from typing import Any

from app.backends.redis import RedisUnavailable, SharedRedis, shared_redis
from app.runs.signals import LocalSignals

DEFAULT_PREFIX = "plantree:signals"
SUBSCRIBE_WAIT_S = 10.0
FLUSH_WAIT_S = 2.0
MAX_BATCH = 500
# The listener's longest sleep between looks at the outage policy (so a recovery another user
# noticed is seen soon) and its shortest (while another call probes).
RELISTEN_MAX_S = 1.0
RELISTEN_MIN_S = 0.05


class RedisSignals(LocalSignals):
    """Publishes and receives wake-ups on Redis channels under `prefix`."""

    def __init__(
        self, url: str, prefix: str = DEFAULT_PREFIX, *, redis: SharedRedis | None = None
    ) -> None:
        super().__init__()
        self._url = url
        self._redis = redis or shared_redis(url)
        self.events_channel = f"{prefix}:events"
        self.cancel_channel = f"{prefix}:cancel"
        self.queued_channel = f"{prefix}:queued"
        self.command_channel = f"{prefix}:command"
        self._me = uuid.uuid4().hex[:12]
        self._outbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._tried = asyncio.Event()  # the first subscription attempt ended, either way
        self._subscribed = False
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def subscribed(self) -> bool:
        """Whether the listener holds a confirmed subscription now."""
        return self._subscribed

    async def _open(self) -> None:
        self._subscribed = False
        self._tasks = [
            asyncio.create_task(self._listen(), name="lats-redis-listen"),
            asyncio.create_task(self._publish(), name="lats-redis-publish"),
        ]
        with contextlib.suppress(TimeoutError):
            # Not fatal when it fails: the store-side backstops keep every run correct, only
            # slower, and the adapter has logged the outage.
            async with asyncio.timeout(SUBSCRIBE_WAIT_S):
                await self._tried.wait()

    async def close(self) -> None:
        with contextlib.suppress(TimeoutError):
            # What was announced before the stop (a drain's given-back runs) still goes out.
            async with asyncio.timeout(FLUSH_WAIT_S):
                await self._outbox.join()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._redis.aclose()

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

    async def publish_command(self, run_id: str) -> None:
        self.command_received(run_id)
        self._send(self.command_channel, run_id)

    def _send(self, channel: str, payload: str) -> None:
        self._outbox.put_nowait((channel, f"{self._me}|{payload}"))

    async def _publish(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while not self._outbox.empty() and len(batch) < MAX_BATCH:
                batch.append(self._outbox.get_nowait())
            try:
                await self._redis.call(functools.partial(_publish_all, batch=batch))
            except RedisUnavailable:
                pass  # only wake-ups: the store has what they announce
            finally:
                for _ in batch:
                    self._outbox.task_done()

    # -- receiving -----------------------------------------------------------------------------
    async def _listen(self) -> None:
        channels = (
            self.events_channel,
            self.cancel_channel,
            self.queued_channel,
            self.command_channel,
        )
        while True:
            try:
                async with self._redis.subscription(channels) as subscription:
                    self._subscribed = True
                    self._tried.set()
                    self.wake_all()  # whatever happened while not subscribed
                    async for channel, message in subscription.messages():
                        self._dispatch(channel, message)
            except RedisUnavailable:
                self._subscribed = False
                self._tried.set()
            wait = self._redis.health.retry_in()
            await asyncio.sleep(min(RELISTEN_MAX_S, max(RELISTEN_MIN_S, wait)))

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
        elif channel == self.command_channel:
            self.command_received(payload)

    def event_written_elsewhere(self, run_id: str) -> None:
        """Another process stored an event of `run_id`: wake the watchers here."""
        LocalSignals.event_written(self, run_id)


async def _publish_all(client: Any, *, batch: list[tuple[str, str]]) -> None:
    async with client.pipeline(transaction=False) as pipe:
        for channel, message in dict.fromkeys(batch):  # repeats wake no one more
            pipe.publish(channel, message)
        await pipe.execute()
