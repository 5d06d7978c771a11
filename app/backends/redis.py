"""The one Redis adapter: the process's clients for one Redis URL and the outage policy every
user of that Redis shares (`redis_health.RedisHealth`).

Every command goes through `call` (or `script`, `call_sync`, `subscription`): the policy is
asked first, so while Redis is marked down a call raises `RedisUnavailable` at once without
touching the network; a refused or reset connection or a timeout marks it down and raises
`RedisUnavailable` too. Users catch that one error and degrade (docs/deploy.md, "When Redis is
down"); any other Redis error (a bad script, a wrong type) is an answer, so it counts as Redis
being up and propagates.

Clients: one asyncio client per running event loop (an asyncio client belongs to the loop that
made it; a process runs one loop in production, tests start one per test) and one synchronous
client, each with a connect timeout and a per-command socket timeout and no retries of their
own, so a hung Redis costs one call about `command_timeout_s`, and then nothing while down.
Nothing connects before the first command.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from app.backends.redis_health import HealthObserver, NoObserver, RedisHealth, Ticket

T = TypeVar("T")

CONNECT_TIMEOUT_S = 1.0
COMMAND_TIMEOUT_S = 1.0
POLL_S = 1.0  # a subscription's idle wake-up, to look whether Redis still answers
KEEPALIVE_S = 5.0  # a quiet subscription pings after this long


# The first lines of every Lua script that reads the clock: `now`, Redis's, in seconds, so
# that processes on different hosts share one clock.
LUA_NOW = """local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# A time kept under KEYS[1] until it passes (a rate's next free start): `due`, the kept time, or
# now when none is kept or it has passed; `keep(t)` keeps `t` there in its place.
LUA_DUE = (
    LUA_NOW
    + """local due = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local function keep(t)
  redis.call('SET', KEYS[1], string.format('%.6f', t), 'PX', math.ceil((t - now) * 1000) + 1)
end
"""
)


class RedisUnavailable(Exception):
    """Redis is marked down, or this call just failed to reach it: degrade."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _answer_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError,)


def _network_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import ConnectionError, TimeoutError

    # OSError covers the builtin TimeoutError of the call's own deadline.
    return (ConnectionError, TimeoutError, OSError)


def address(url: str) -> str:
    """`host:port/db` of a Redis URL, without its credentials: the name in logs and metrics."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path or '/0'}"


def error_kind(error: BaseException) -> str:
    """What went wrong, for the log line and the metric: refused, reset, timeout or
    connection."""
    from redis.exceptions import TimeoutError as RedisTimeout

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, (RedisTimeout, TimeoutError)):
            return "timeout"
        if isinstance(seen, ConnectionRefusedError):
            return "refused"
        if isinstance(seen, (ConnectionResetError, BrokenPipeError)):
            return "reset"
        if isinstance(seen, OSError) and seen.errno == errno.ECONNREFUSED:
            return "refused"
        seen = seen.__cause__ or seen.__context__
    text = str(error).lower()
    if "refused" in text:
        return "refused"
    if "reset" in text or "closed" in text:
        return "reset"
    if "timeout" in text or "timed out" in text:
        return "timeout"
    return "connection"


@dataclass(slots=True)
class _LoopClient:
    client: Any
    scripts: dict[str, Any] = field(default_factory=dict)


class SharedRedis:
    """The clients of one Redis URL and its outage policy; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        health: RedisHealth | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        command_timeout_s: float = COMMAND_TIMEOUT_S,
    ) -> None:
        self.url = url
        self.name = address(url)
        self.health = health or RedisHealth(self.name)
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient]
        self._loops = weakref.WeakKeyDictionary()
        self._sync: Any = None

    def _options(self) -> dict[str, Any]:
        return {
            "socket_connect_timeout": self.connect_timeout_s,
            "socket_timeout": self.command_timeout_s,
        }

    def _new_client(self) -> Any:
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        return aioredis.Redis.from_url(self.url, retry=Retry(NoBackoff(), 0), **self._options())

    def _loop_client(self) -> _LoopClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            made = self._loops.get(loop)
            if made is None:
                made = self._loops[loop] = _LoopClient(self._new_client())
            return made

    def _sync_client(self) -> Any:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        with self._lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(
                    self.url, retry=Retry(NoBackoff(), 0), **self._options()
                )
            return self._sync

    def _admit(self) -> Ticket:
        ticket = self.health.admit()
        if ticket is None:
            raise RedisUnavailable(f"redis {self.name} is down", "down")
        return ticket

    def _failed(self, ticket: Ticket, error: BaseException) -> RedisUnavailable:
        kind = error_kind(error)
        self.health.failed(ticket, kind)
        return RedisUnavailable(f"redis {self.name}: {kind}", kind)

    @contextlib.contextmanager
    def _judged(self) -> Iterator[None]:
        """One call under the policy: admitted (or `RedisUnavailable` at once), then its
        outcome told to the health policy. A network error becomes `RedisUnavailable`."""
        ticket = self._admit()
        try:
            yield
        except _network_errors() as e:
            raise self._failed(ticket, e) from e
        except _answer_errors():
            self.health.succeeded(ticket)  # Redis answered, with an error of the caller's
            raise
        except BaseException:
            self.health.abandoned(ticket)  # cancelled, or the caller's own bug: no verdict
            raise
        self.health.succeeded(ticket)

    @property
    def _deadline_s(self) -> float:
        # A backstop over the socket timeouts: connecting and one reply.
        return self.connect_timeout_s + self.command_timeout_s

    async def call(self, command: Callable[[Any], Awaitable[T]]) -> T:
        """`command(client)` on the running loop's asyncio client, under the policy; raises
        `RedisUnavailable` when Redis is down or does not answer."""
        with self._judged():
            async with asyncio.timeout(self._deadline_s):
                result = await command(self._loop_client().client)
        return result

    async def script(self, source: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run the Lua script `source` (registered once per loop) under the policy."""

        def run(client: Any) -> Awaitable[Any]:
            made = self._loop_client()
            script = made.scripts.get(source)
            if script is None:
                script = made.scripts[source] = client.register_script(source)
            return script(keys=list(keys), args=list(args))  # type: ignore[no-any-return]

        return await self.call(run)

    def call_sync(self, command: Callable[[Any], T]) -> T:
        """`command(client)` on the synchronous client, under the policy."""
        with self._judged():
            result = command(self._sync_client())
        return result

    @contextlib.asynccontextmanager
    async def subscription(self, channels: Sequence[str]) -> AsyncIterator[Subscription]:
        """Subscribed to `channels` (confirmed by Redis) for the block; raises
        `RedisUnavailable` when that fails, or later from `Subscription.messages`."""
        # A client of its own: closing the loop's shared one (a user's `aclose`) leaves it be.
        client = self._new_client()
        pubsub = client.pubsub()
        try:
            with self._judged():
                async with asyncio.timeout(self._deadline_s):
                    await pubsub.subscribe(*channels)
                    confirmed = 0
                    while confirmed < len(channels):
                        message = await pubsub.get_message(timeout=self.command_timeout_s)
                        if message is None:
                            raise TimeoutError("no subscription confirmation")
                        if message.get("type") == "subscribe":
                            confirmed += 1
            yield Subscription(self, pubsub)
        finally:
            with contextlib.suppress(*_network_errors()):
                await pubsub.aclose()
            with contextlib.suppress(*_network_errors()):
                await client.aclose()

    def lost(self, error: BaseException) -> RedisUnavailable:
        """Note that a connection held outside a call (a subscription) failed."""
        kind = error_kind(error)
        self.health.lost(kind)
        return RedisUnavailable(f"redis {self.name}: {kind}", kind)

    async def aclose(self) -> None:
        """Close the running loop's idle connections (the next call makes a new client).
        Connections other users of this Redis hold stay open for their commands: closing them
        would fail those commands and mark a Redis down that is up."""
        with self._lock:
            made = self._loops.pop(asyncio.get_running_loop(), None)
        if made is not None:
            await made.client.connection_pool.disconnect(inuse_connections=False)

    def close(self) -> None:
        """Close the synchronous client, if one was made."""
        with self._lock:
            client, self._sync = self._sync, None
        if client is not None:
            client.close()


class Subscription:
    """The messages of a confirmed subscription, watched for a Redis that stops answering."""

    def __init__(self, redis: SharedRedis, pubsub: Any) -> None:
        self._redis = redis
        self._pubsub = pubsub

    async def messages(self) -> AsyncIterator[tuple[str, str]]:
        """(channel, payload) of each message, until Redis fails (`RedisUnavailable`)."""
        now = asyncio.get_running_loop().time
        heard = now()
        pinged: float | None = None
        while True:
            try:
                message = await self._pubsub.get_message(timeout=POLL_S)
                if message is not None:
                    heard, pinged = now(), None
                    if message.get("type") == "message":
                        yield _text(message["channel"]), _text(message["data"])
                    continue
                if pinged is None and now() - heard >= KEEPALIVE_S:
                    await self._pubsub.ping()
                    pinged = now()
                elif pinged is not None and now() - pinged > self._redis.command_timeout_s:
                    raise TimeoutError("no reply to a subscription's ping")
            except _network_errors() as e:
                raise self._redis.lost(e) from e


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


_shared: dict[str, SharedRedis] = {}
_shared_lock = threading.Lock()


def shared_redis(
    url: str, *, observer: Callable[[str], HealthObserver] | None = None
) -> SharedRedis:
    """The process's one adapter (clients and outage policy) for the Redis at `url`, so every
    user of that Redis in the process sees one outage the same way. `observer`, given the
    adapter's name, makes what its outages are told to (the metrics, handed in where the service
    is assembled: app/startup.py); it serves the call that makes the adapter."""
    with _shared_lock:
        redis = _shared.get(url)
        if redis is None:
            name = address(url)
            health = RedisHealth(name, observer=observer(name) if observer else NoObserver())
            redis = _shared[url] = SharedRedis(url, health=health)
        return redis
