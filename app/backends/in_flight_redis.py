"""The adaptive in-flight cap shared by every process through Redis (`LATS_REDIS_URL`): one cap
per model for the whole deployment, learnt from every process's answers.

The rules are `calls.concurrency`'s, run in Redis, atomically, inside the model limiter's own
scripts (`app.backends.model_limiter_redis`), so a call costs no more round trips than the
shared rate alone: taking a place is part of reserving the rate slot, giving it back part of
reporting the outcome.

- The calls in flight are the members of a sorted set per model, one per call, named by its
  process and scored by the moment its hold runs out (`hold_s`: the model call timeout and a
  margin). A call takes a member when fewer are held than the cap allows; its answer removes
  it.
- Every script a process runs marks it alive for `alive_s` (20 s). When a call finds the cap
  full, the members of processes not heard of for that long are removed first: a process that
  died holding places gives them back 20 s after its last call, or when their holds run out,
  whichever is first. (A process whose calls have all been in flight that long, starting and
  ending none, is taken for dead the same way: the cap then overshoots by its calls until
  they end.)
- The cap's state (the cap, its round, the two latency averages, the answers and the cuts)
  is one hash per model. An answer's outcome and latency update it as `ConcurrencyLimit`
  updates its own, so a 429 seen by one process cuts the cap of all of them.
- `LATS_MODEL_MAX_IN_FLIGHT` is the ceiling of this shared cap, so with Redis it bounds the
  deployment's calls in flight per model, not each process's.

A call that finds the cap full waits in its process's queue (arrival order); the first in the
queue asks Redis again when a call of its own process ends, and otherwise every `POLL_S` at
most, so a place freed by another process is taken within that time. While Redis is down the
limiter falls back to its in-process cap; a member whose answer cannot be written back then
is given back when its hold runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from calls import concurrency
from calls.ratelimit import Outcome, Permit

POLL_S = 0.05  # the longest a waiter goes without asking Redis again
FIRST_POLL_S = 0.005
STATE_TTL_S = 24 * 3600  # an idle model's cap goes away; the next call starts afresh
ALIVE_S = 20.0  # a process not heard of for this long holds no place when the cap is full

T = TypeVar("T")

# Lua, for a script that has `now` and whose KEYS[2], KEYS[3] and KEYS[4] are the members, the
# cap's hash and the processes alive, and whose ARGV from `P` on are
# `SharedInFlightGate.place_args`: `take_place()` returns {'go' | 'full', limit, round,
# full '1' | '0'} as strings; a member of '' takes no place.
_ALIVE = """
local function alive_now(member, alive_s, ttl)
  local process = string.match(member, '^([^:]+):')
  if process then
    redis.call('ZADD', KEYS[4], now + alive_s, process)
    redis.call('EXPIRE', KEYS[4], ttl)
  end
end
"""

TAKE_PLACE = (
    _ALIVE
    + """
local function sweep(slots)
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  for _, member in ipairs(redis.call('ZRANGE', slots, 0, -1)) do
    local process = string.match(member, '^([^:]+):')
    if process and not redis.call('ZSCORE', KEYS[4], process) then
      redis.call('ZREM', slots, member)
    end
  end
end
local function take_place()
  local slots, ch = KEYS[2], KEYS[3]
  local ceiling, floor = tonumber(ARGV[P + 2]), tonumber(ARGV[P + 4])
  local cap = tonumber(redis.call('HGET', ch, 'cap') or ARGV[P + 3])
  cap = math.max(floor, math.min(ceiling, cap))
  local limit = math.max(floor, math.floor(cap))
  local round = redis.call('HGET', ch, 'round') or '0'
  if ARGV[P] == '' then return {'go', tostring(limit), round, '0'} end
  alive_now(ARGV[P], tonumber(ARGV[P + 6]), tonumber(ARGV[P + 5]))
  redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
  local held = redis.call('ZCARD', slots)
  if held >= limit then
    sweep(slots)
    held = redis.call('ZCARD', slots)
  end
  if held >= limit then return {'full', tostring(limit), round, '0'} end
  redis.call('ZADD', slots, now + tonumber(ARGV[P + 1]), ARGV[P])
  redis.call('EXPIRE', slots, tonumber(ARGV[P + 5]))
  local full = '0'
  if held + 1 >= limit then full = '1' end
  return {'go', tostring(limit), round, full}
end
"""
)

# Lua, with the same KEYS and ARGV from `Q` on `SharedInFlightGate.leave_args`:
# `give_place()` removes the call's member and teaches the cap its outcome; it returns
# the cap as a string.
GIVE_PLACE = (
    _ALIVE
    + """
local function give_place()
  local slots, ch = KEYS[2], KEYS[3]
  redis.call('ZREM', slots, ARGV[Q])
  alive_now(ARGV[Q], tonumber(ARGV[Q + 15]), tonumber(ARGV[Q + 8]))
  local function cnum(field, default)
    local v = redis.call('HGET', ch, field)
    if v then return tonumber(v) end
    return default
  end
  local outcome, latency = ARGV[Q + 1], tonumber(ARGV[Q + 2])
  local sent_round, was_full = tonumber(ARGV[Q + 3]), ARGV[Q + 4] == '1'
  local ceiling, floor = tonumber(ARGV[Q + 5]), tonumber(ARGV[Q + 7])
  local beta, slow_beta, tolerance = tonumber(ARGV[Q + 9]), tonumber(ARGV[Q + 10]),
    tonumber(ARGV[Q + 11])
  local short_w, long_w, warmup = tonumber(ARGV[Q + 12]), tonumber(ARGV[Q + 13]),
    tonumber(ARGV[Q + 14])
  local cap = math.max(floor, math.min(ceiling, cnum('cap', tonumber(ARGV[Q + 6]))))
  local round, cuts = cnum('round', 0), cnum('cuts', 0)
  local function cut(factor)
    if sent_round ~= round then return end
    cap = math.max(floor, cap * factor)
    round = round + 1
    cuts = cuts + 1
  end
  if outcome == 'ok' then
    local answers = cnum('answers', 0) + 1
    local short, long = latency, latency
    if answers > 1 then
      short = cnum('short', latency)
      long = cnum('long', latency)
      short = short + short_w * (latency - short)
      long = long + long_w * (latency - long)
    end
    local slowing = short > tolerance * long and short - long >= tonumber(ARGV[Q + 16])
    if answers > warmup and slowing then
      cut(slow_beta)
    elseif was_full and sent_round == round then
      cap = math.min(ceiling, cap + 1.0 / cap)
    end
    redis.call('HSET', ch, 'answers', answers, 'short', string.format('%.9f', short),
      'long', string.format('%.9f', long))
  elseif outcome == 'rate_limited' then
    cut(beta)
  end
  redis.call('HSET', ch, 'cap', string.format('%.9f', cap), 'round', round, 'cuts', cuts)
  redis.call('EXPIRE', ch, tonumber(ARGV[Q + 8]))
  return string.format('%.9f', cap)
end
"""
)


@dataclass
class _Waiting:
    """One event loop's queue of callers: its first caller asks Redis, the others wait for it;
    `freed` is set when a call of this process ends."""

    head: asyncio.Lock
    freed: asyncio.Event


class SharedInFlightGate:
    """This process's side of the deployment's in-flight cap for one model (see the module
    docstring): the arguments of the Lua above, the local queue of waiting callers and what
    it last saw. Serves any number of event loops (each has its own queue)."""

    def __init__(
        self,
        key: str,
        *,
        ceiling: int,
        hold_s: float,
        alive_s: float = ALIVE_S,
        initial: int = concurrency.DEFAULT_INITIAL,
        floor: int = 1,
    ) -> None:
        # Its members, its cap's hash, the processes alive (by when they were last heard of).
        self.keys = [f"{key}:in-flight", f"{key}:cap", f"{key}:alive"]
        self.process = uuid.uuid4().hex[:16]  # this process's name in its members
        self.alive_s = alive_s
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        self.initial = max(self.floor, min(initial, self.ceiling))
        self.hold_s = hold_s
        self.held = 0  # this process's calls in flight
        self.limit = self.initial  # the shared cap, as last seen
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Waiting] = (
            weakref.WeakKeyDictionary()
        )

    def place_args(self, member: str) -> list[Any]:
        """ARGV for `TAKE_PLACE` (`member` '': take none)."""
        return [
            member,
            self.hold_s,
            self.ceiling,
            self.initial,
            self.floor,
            STATE_TTL_S,
            self.alive_s,
        ]

    def leave_args(self, permit: Permit, outcome: Outcome) -> list[Any]:
        """ARGV for `GIVE_PLACE`: `permit`'s place and what its call's answer teaches."""
        return [
            permit.slot,
            outcome,
            f"{time.monotonic() - permit.sent_at:.6f}",
            permit.cap_round,
            "1" if permit.cap_full else "0",
            self.ceiling,
            self.initial,
            self.floor,
            STATE_TTL_S,
            concurrency.BETA,
            concurrency.SLOW_BETA,
            concurrency.TOLERANCE,
            concurrency.SHORT,
            concurrency.LONG,
            concurrency.WARMUP,
            self.alive_s,
            concurrency.MIN_RISE_S,
        ]

    def _waiting(self) -> _Waiting:
        loop = asyncio.get_running_loop()
        waiting = self._loops.get(loop)
        if waiting is None:
            waiting = self._loops[loop] = _Waiting(asyncio.Lock(), asyncio.Event())
        return waiting

    async def enter(self, attempt: Callable[[str], Awaitable[T | None]]) -> T:
        """`attempt(member)` until it takes a place (None: the cap was full), in this loop's
        queue; what it returned. `attempt` must give back the place it took if it fails or is
        cancelled."""
        token = f"{self.process}:{uuid.uuid4().hex}"
        waiting = self._waiting()
        async with waiting.head:
            pause = FIRST_POLL_S
            while True:
                waiting.freed.clear()
                taken = await attempt(token)
                if taken is not None:
                    return taken
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await waiting.freed.wait()
                pause = min(POLL_S, pause * 2)

    def seen(self, taken: bool, place: list[bytes]) -> tuple[int, bool]:
        """Read the rest of `take_place()`'s reply (limit, round, full) for a place `taken` or
        not: (its round, whether it filled the cap)."""
        limit, cap_round, full = place
        self.limit = int(limit)
        if taken:
            self.held += 1
        return int(cap_round), full == b"1"

    def left(self, cap: bytes | None = None) -> None:
        """A call of this process ended (with `give_place()`'s reply, when it was written):
        wake this loop's first waiter (a waiter on another loop asks again within
        `POLL_S`)."""
        self.held = max(0, self.held - 1)
        if cap is not None:
            self.limit = max(self.floor, min(self.ceiling, math.floor(float(cap))))
        waiting = self._loops.get(asyncio.get_running_loop())
        if waiting is not None:
            waiting.freed.set()
