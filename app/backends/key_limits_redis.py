"""The per-key request rate and open-stream limits shared by every API process through Redis
(`LATS_REDIS_URL`), so that N replicas give a key its limits once, not N times.

- **Requests**: a GCRA (the in-process `calls.ratelimit.TokenBucket`'s rule: `rps` per second,
  bursts of `burst`) with its one number, the key's theoretical arrival time, in a Redis string
  per key. The check runs as a Lua script on Redis's clock; a refusal writes nothing.
- **Streams**: a sorted set per key of the streams held open, each scored by when its hold
  lapses. Taking a slot drops the lapsed ones, counts, and adds the new one in one script. The
  process holding streams renews their scores every `renew_s`; a slot given back is removed at
  once, and one whose process died lapses after `hold_s`.

Both run through the process's Redis adapter (app/backends/redis.py). While Redis is down (it
says so at once) a check returns None and the caller applies its own process's limit instead:
a key then gets its limits per process until Redis is back (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable

from app.backends.redis import LUA_DUE, LUA_NOW, RedisUnavailable, SharedRedis

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "plantree:key"
HOLD_S = 30.0  # a stream slot not renewed for this long is free again
RENEW_S = 10.0

# KEYS: the key's arrival-time string. ARGV: interval (1/rps), burst. Returns {'1'|'0', wait}.
_REQUEST = (
    LUA_DUE
    + """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wait = due - now - (burst - 1) * interval
if wait > 0 then return {'0', string.format('%.6f', wait)} end
keep(due + interval)
return {'1', '0'}
"""
)

# KEYS: the key's stream set. ARGV: member, most streams, hold (s). Returns 1 (taken) or 0.
_TAKE_STREAM = (
    LUA_NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000))
return 1
"""
)

# KEYS: stream sets; ARGV: hold (s), then per key the number of its members, then the members.
_RENEW = (
    LUA_NOW
    + """
local hold = tonumber(ARGV[1])
local at = 2
for i, key in ipairs(KEYS) do
  local n = tonumber(ARGV[at])
  for j = 1, n do redis.call('ZADD', key, 'XX', now + hold, ARGV[at + j]) end
  redis.call('PEXPIRE', key, math.ceil(hold * 1000))
  at = at + n + 1
end
return 1
"""
)


class RedisKeyLimits:
    """The shared halves of `app.access.limits.KeyLimits`; each check says None while Redis
    is down (the caller then counts in its process)."""

    def __init__(
        self,
        redis: SharedRedis,
        *,
        prefix: str = DEFAULT_PREFIX,
        hold_s: float = HOLD_S,
        renew_s: float = RENEW_S,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.hold_s, self.renew_s = hold_s, renew_s
        self._held: dict[str, set[str]] = {}  # stream-set key -> members this process holds
        self._renewer: asyncio.Task[None] | None = None
        self._removals: set[asyncio.Task[None]] = set()

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    async def request(self, name: str, rps: float, burst: int) -> float | None:
        """0 when the key may make one more request now, else the seconds until it may; None
        while Redis is down."""
        try:
            granted, wait = await self.redis.script(
                _REQUEST, [self._key("rate", name)], [1.0 / rps, burst]
            )
        except RedisUnavailable:
            return None
        return 0.0 if granted == b"1" else float(wait)

    async def take_stream(self, name: str, max_streams: int) -> str | bool | None:
        """A held slot's token, False when the key has `max_streams` open across processes,
        None while Redis is down."""
        member = uuid.uuid4().hex
        key = self._key("streams", name)
        try:
            taken = await self.redis.script(_TAKE_STREAM, [key], [member, max_streams, self.hold_s])
        except RedisUnavailable:
            return None
        if not taken:
            return False
        self._held.setdefault(key, set()).add(member)
        self._start_renewing()
        return f"{key} {member}"

    def give_back(self, token: str) -> None:
        """Give a slot back: forgotten here at once, removed from Redis in the background (if
        that fails, it lapses after `hold_s`)."""
        key, member = token.split(" ", 1)
        held = self._held.get(key)
        if held is not None:
            held.discard(member)
            if not held:
                del self._held[key]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a finaliser at exit): the hold lapses
        removal = loop.create_task(self._remove(key, member))
        self._removals.add(removal)
        removal.add_done_callback(self._removals.discard)

    async def _remove(self, key: str, member: str) -> None:
        with contextlib.suppress(RedisUnavailable):
            await self.redis.call(lambda client: client.zrem(key, member))

    def _start_renewing(self) -> None:
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        while self._held:
            await asyncio.sleep(self.renew_s)
            await self.renew()

    async def renew(self) -> None:
        """Push back the lapse of every stream slot this process holds (one script)."""
        held = {key: sorted(members) for key, members in self._held.items() if members}
        if not held:
            return
        try:
            await self.redis.script(_RENEW, list(held), [self.hold_s, *_counted(held.values())])
        except RedisUnavailable:
            logger.info("stream slots not renewed: redis %s is down", self.redis.name)

    async def aclose(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer


def _counted(groups: Iterable[list[str]]) -> list[str | int]:
    out: list[str | int] = []
    for members in groups:
        out += [len(members), *members]
    return out
