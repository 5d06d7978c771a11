"""The adaptive model limiter shared by every process through Redis (`LATS_REDIS_URL`).

The state of `calls.aimd.AimdState` lives in one Redis hash per model, and its two rules —
reserve a slot; take a success or a 429 — run as Lua scripts, atomically, on Redis's clock, so
processes on different hosts agree. The adaptive in-flight cap is shared as well: one cap per
model for the deployment (`app.backends.in_flight_redis`). Every script runs through the
process's Redis adapter (app/backends/redis.py): while Redis is down (the adapter says so at
once, and logs the outage once), each request is granted by the process's own in-process
limiter for the model instead (its own rate and cap), and its outcome is fed back there; the
first request after Redis recovers uses the shared rate and cap again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import replace
from typing import Any

from app.backends.in_flight_redis import ALIVE_S, GIVE_PLACE, TAKE_PLACE, SharedInFlightGate
from app.backends.redis import LUA_NOW, RedisUnavailable, SharedRedis, shared_redis
from calls.aimd import DEFAULT_BETA, DEFAULT_FLOOR, DEFAULT_GROWTH, DEFAULT_RETRY_AFTER_S, AimdState
from calls.ratelimit import (
    LimiterSource,
    LimiterStats,
    LocalLimiter,
    ModelLimiter,
    Outcome,
    Permit,
    shared_limiter,
)
from calls.settings import ModelSettings

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "plantree:model-rate"
STATE_TTL_S = 24 * 3600  # an idle model's state goes away; the next grant starts afresh
# A call's place in flight, if never given back (its process died): its timeout and this.
HOLD_MARGIN_S = 30.0
DEFAULT_HOLD_S = ModelSettings.model_fields["model_timeout_s"].default + HOLD_MARGIN_S

# A place taken: its member, the rate slot's start and Redis's now, the slot's epoch, the cap's
# round and whether the place filled the cap.
_Taken = tuple[str, float, float, int, int, bool]

_LUA_COMMON = (
    LUA_NOW
    + """
local h = KEYS[1]
local function num(field, default)
  local v = redis.call('HGET', h, field)
  if v then return tonumber(v) end
  return default
end
local function put(field, value) redis.call('HSET', h, field, string.format('%.6f', value)) end
local NEVER = -1e18
local ceiling = tonumber(ARGV[1])
local function effective()
  local rate = num('rate', 0)
  local eff = nil
  if rate > 0 then eff = rate end
  if ceiling > 0 and (eff == nil or ceiling < eff) then eff = ceiling end
  return eff
end
"""
)

# KEYS: the rate's hash, then the in-flight cap's three keys. ARGV: ceiling (0: none), burst,
# ttl, epoch of the slot the caller waited for (-1: none yet), then the place's arguments
# (`SharedInFlightGate.place_args`; a token only on the first call). Returns {start, now,
# epoch, limit, round, full} as strings (Lua numbers would be cut to integers on the way out);
# start is 'go' when the caller's slot is still of the current epoch, 'full' when the in-flight
# cap had no place (nothing reserved).
_RESERVE = (
    _LUA_COMMON
    + "local P = 5\n"
    + TAKE_PLACE
    + """
local epoch = num('epoch', 0)
local held = tonumber(ARGV[4])
if held >= 0 and held == epoch then
  return {'go', string.format('%.6f', now), tostring(epoch), '0', '0', '0'}
end
local place = take_place()
if place[1] == 'full' then
  return {'full', string.format('%.6f', now), tostring(epoch), place[2], place[3], place[4]}
end
local burst = math.max(1, tonumber(ARGV[2]))
local start = math.max(now, num('cooldown', NEVER))
local eff = effective()
if eff then
  local interval = 1.0 / eff
  local tat = num('tat', NEVER)
  if eff == num('rate', 0) then burst = 1 end
  start = math.max(start, tat - (burst - 1) * interval)
  put('tat', math.max(tat, start) + interval)
end
if held < 0 then
  local ws = num('win_start', NEVER)
  local wc = num('win_count', 0)
  if start - ws >= 1.0 then
    local prev = 0
    if start - ws < 2.0 and wc > 0 then prev = wc / (start - ws) end
    put('obs_prev', prev)
    put('win_start', start)
    wc = 0
  end
  put('win_count', wc + 1)
  redis.call('HINCRBY', h, 'grants', 1)
end
redis.call('EXPIRE', h, tonumber(ARGV[3]))
return {string.format('%.6f', start), string.format('%.6f', now), tostring(epoch), place[2],
  place[3], place[4]}
"""
)

# KEYS: as `_RESERVE`'s. ARGV: ceiling, kind ('ok' | 'rate_limited' | 'error'), the slot's
# epoch, retry_after (< 0: unknown), beta, growth, floor, default retry, then the place's
# (`SharedInFlightGate.leave_args`). Returns {rate (0: none), cut (0/1), cap}.
_FEEDBACK = (
    _LUA_COMMON
    + "local Q = 9\n"
    + GIVE_PLACE
    + """
local function feedback()
  if ARGV[2] == 'error' then return {string.format('%.6f', num('rate', 0)), '0'} end
  local kind = ARGV[2]
  local epoch = tonumber(ARGV[3])
  local retry_after = tonumber(ARGV[4])
  local beta, growth, floor = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local rate = num('rate', 0)
  if kind == 'ok' then
    if rate > 0 then
      rate = rate + growth * num('base', rate) / rate
      if ceiling > 0 and rate > ceiling then rate = ceiling end
      put('rate', rate)
    end
    return {string.format('%.6f', rate), '0'}
  end
  redis.call('HINCRBY', h, 'rate_limited', 1)
  local pause = tonumber(ARGV[8])
  if retry_after >= 0 then pause = retry_after end
  put('cooldown', math.max(num('cooldown', NEVER), now + pause))
  if epoch ~= num('epoch', 0) then return {string.format('%.6f', rate), '0'} end
  local current = effective()
  if current == nil then
    local ws = num('win_start', NEVER)
    current = math.max(num('obs_prev', 0), num('win_count', 0) / math.max(now - ws, 1.0))
  end
  rate = math.max(floor, beta * current)
  if ceiling > 0 and rate > ceiling then rate = ceiling end
  put('rate', rate)
  put('base', rate)
  redis.call('HINCRBY', h, 'epoch', 1)
  put('tat', math.max(now, num('cooldown', NEVER)))
  redis.call('HINCRBY', h, 'cuts', 1)
  return {string.format('%.6f', rate), '1'}
end
local placed = give_place()
local fed = feedback()
return {fed[1], fed[2], placed}
"""
)


class RedisLimiter:
    """`ModelLimiter` whose rate state is shared through Redis; see the module docstring."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        ceiling: float | None,
        burst: int,
        max_in_flight: int,
        hold_s: float = DEFAULT_HOLD_S,
        alive_s: float = ALIVE_S,
        prefix: str = DEFAULT_PREFIX,
        redis: SharedRedis | None = None,
    ) -> None:
        self.url = url
        self.key = f"{prefix}:{model}"
        self.ceiling = ceiling or 0.0
        self.burst = max(1, burst)
        self.name = model
        self._redis = redis or shared_redis(url)
        self.gate = SharedInFlightGate(
            self.key, ceiling=max_in_flight, hold_s=hold_s, alive_s=alive_s
        )
        self._keys = [self.key, *self.gate.keys]
        # The stand-in while Redis is down: the same rules on this process's own state.
        self._fallback = LocalLimiter(
            AimdState(ceiling=ceiling, burst=burst), max_in_flight, name=model
        )
        self._rate: float | None = None
        self._grants = 0
        self._rate_limited = 0
        self._cuts = 0

    async def acquire(self) -> Permit:
        try:
            return await self._acquire()
        except RedisUnavailable:
            permit = await self._fallback.acquire()
            return replace(permit, fallback=True)  # its place in the stand-in's gate kept

    async def _acquire(self) -> Permit:
        """A place among the deployment's calls in flight (waiting in this process's queue
        while the cap is full), then its rate slot, waited for outside the queue."""
        token, start, now, epoch, cap_round, cap_full = await self.gate.enter(self._attempt)
        try:
            permit = await self._slot(start, now, epoch)
        except BaseException:
            self.gate.left()
            await asyncio.shield(self._give_back(token))
            raise
        return replace(
            permit, slot=token, cap_round=cap_round, cap_full=cap_full, sent_at=time.monotonic()
        )

    async def _reserve(self, held: int, token: str = "") -> list[bytes]:
        """`_RESERVE` once: a place in flight (with a `token`) and the rate slot."""
        args = [self.ceiling, self.burst, STATE_TTL_S, held, *self.gate.place_args(token)]
        reply: list[bytes] = await self._redis.script(_RESERVE, self._keys, args)
        return reply

    async def _attempt(self, token: str) -> _Taken | None:
        """Take a place and reserve a rate slot; None when the deployment's in-flight cap is
        full (nothing taken)."""
        try:
            start_s, now_s, epoch_s, *place = await self._reserve(-1, token)
        except asyncio.CancelledError:
            # The script may have run: give back the place it may have taken.
            await asyncio.shield(self._give_back(token))
            raise
        taken = start_s != b"full"
        cap_round, cap_full = self.gate.seen(taken, place)
        if not taken:
            return None
        self._grants += 1
        return token, float(start_s), float(now_s), int(epoch_s), cap_round, cap_full

    async def _slot(self, start: float, now: float, held: int) -> Permit:
        """Wait for the rate slot reserved at `start`; reserve again if the rate was cut
        meanwhile (a new epoch)."""
        while start > now:
            await asyncio.sleep(start - now)
            start_s, now_s, epoch_s, *_ = await self._reserve(held)
            if start_s == b"go":
                break
            start, now, held = float(start_s), float(now_s), int(epoch_s)
        return Permit(granted_at=start, epoch=held)

    async def _give_back(self, token: str) -> None:
        """A place taken but never used; best effort (it comes back with its hold anyway)."""
        with contextlib.suppress(Exception):
            await self._redis.call(lambda client: client.zrem(self.gate.keys[0], token))

    async def release(
        self, permit: Permit, outcome: Outcome, retry_after_s: float | None = None
    ) -> None:
        if permit.fallback:
            await self._fallback.release(permit, outcome, retry_after_s)
            return
        args = [
            self.ceiling,
            outcome,
            permit.epoch,
            -1.0 if retry_after_s is None else retry_after_s,
            DEFAULT_BETA,
            DEFAULT_GROWTH,
            DEFAULT_FLOOR,
            DEFAULT_RETRY_AFTER_S,
            *self.gate.leave_args(permit, outcome),
        ]
        try:
            rate_s, cut, cap = await self._redis.script(_FEEDBACK, self._keys, args)
        except RedisUnavailable:
            self.gate.left()  # its place comes back with its hold
            return  # the outcome of one request; the shared rate learns from the next
        self.gate.left(cap)
        if outcome == "error":
            return  # says nothing about the rate
        rate = float(rate_s)
        self._rate = rate if rate > 0 else None
        if outcome == "rate_limited":
            self._rate_limited += 1
        if int(cut):
            self._cuts += 1
            logger.warning(
                "%s: rate limited by the provider; shared allowed rate now %.2f/s", self.name, rate
            )

    def stats(self) -> LimiterStats:
        """This process's view: the last shared rate it saw and its own counts."""
        rates = [r for r in (self._rate, self.ceiling or None) if r]
        return LimiterStats(
            rate=min(rates) if rates else None,
            in_flight=self.gate.held,
            max_in_flight=self.gate.limit,
            grants=self._grants,
            rate_limited=self._rate_limited,
            cuts=self._cuts,
        )

    def keys(self) -> list[str]:
        """Every Redis key this limiter's model has (the rate's hash, the cap's three)."""
        return list(self._keys)

    async def shared_cap(self) -> dict[str, str]:
        """The shared in-flight cap's hash and the places held now (tests, diagnostics)."""
        members, cap_hash, _ = self.gate.keys

        async def read(client: Any) -> tuple[dict[bytes, bytes], int]:
            return await client.hgetall(cap_hash), await client.zcard(members)

        raw, held = await self._redis.call(read)
        state = {k.decode(): v.decode() for k, v in raw.items()}
        state["held"] = str(held)
        return state

    async def shared_state(self) -> dict[str, str]:
        """The Redis hash as it is now (for tests and diagnostics)."""
        raw = await self._redis.call(lambda client: client.hgetall(self.key))
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def aclose(self) -> None:
        """Close this loop's connection."""
        await self._redis.aclose()


def redis_model_limiters(
    url: str, *, call_timeout_s: float, redis: SharedRedis | None = None
) -> LimiterSource:
    """A `LimiterSource` whose limiters share each model's rate and in-flight cap through the
    Redis at `url` (one limiter per model and settings in the process, like `model_limiter`),
    over `redis` when given; a call's place outlives a process that died holding it by
    `call_timeout_s` and `HOLD_MARGIN_S` at most."""
    hold_s = call_timeout_s + HOLD_MARGIN_S

    def source(
        model: str, *, ceiling: float | None, burst: int, max_in_flight: int
    ) -> ModelLimiter:
        ceiling = ceiling if ceiling else None

        def make() -> ModelLimiter:
            return RedisLimiter(
                url,
                model,
                ceiling=ceiling,
                burst=burst,
                max_in_flight=max_in_flight,
                hold_s=hold_s,
                redis=redis,
            )

        key = ("redis", url, model, ceiling, burst, max_in_flight, hold_s)
        return shared_limiter(key, make)

    return source
