"""The adaptive in-flight cap (calls/concurrency.py) and the gate that applies it
(calls/ratelimit.py: InFlightGate): it grows one place per round while the cap is full and the
provider keeps up, is cut on a 429 and on rising latency (once per round), stays within its
floor and ceiling, and the gate hands freed places to waiters in order without leaking any."""

from __future__ import annotations

import asyncio

import pytest

from calls.concurrency import BETA, SLOW_BETA, WARMUP, ConcurrencyLimit
from calls.ratelimit import InFlightGate, Permit


async def _settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_full_and_prompt_grows_one_place_per_round_and_idle_never_grows() -> None:
    cap = ConcurrencyLimit(ceiling=64, initial=16)
    for _ in range(17):  # a round: 1/16 + 1/16.06 + ... reaches 17 at the 17th answer
        cap.on_ok(0.3, cap.round, was_full=True)
    assert cap.limit == 17

    idle = ConcurrencyLimit(ceiling=64, initial=16)
    for _ in range(1000):
        idle.on_ok(0.3, idle.round, was_full=False)
    assert idle.limit == 16


def test_growth_stops_at_the_ceiling() -> None:
    cap = ConcurrencyLimit(ceiling=20, initial=16)
    for _ in range(10_000):
        cap.on_ok(0.3, cap.round, was_full=True)
    assert cap.limit == 20


def test_a_429_cuts_once_per_round_and_never_below_the_floor() -> None:
    cap = ConcurrencyLimit(ceiling=64, initial=20)
    sent = cap.round
    cap.on_rate_limited(sent)
    cap.on_rate_limited(sent)  # sent before the cut: says nothing new
    assert cap.limit == int(20 * BETA)
    assert cap.cuts == 1

    for _ in range(50):
        cap.on_rate_limited(cap.round)
    assert cap.limit == 1


def test_rising_latency_cuts_the_cap_and_mixed_but_steady_latency_does_not() -> None:
    steady = ConcurrencyLimit(ceiling=64, initial=32)
    for i in range(400):  # short and long answers mixed, the provider unloaded
        steady.on_ok(0.1 if i % 2 else 1.0, steady.round, was_full=False)
    assert steady.cuts == 0

    slowing = ConcurrencyLimit(ceiling=64, initial=32)
    for _ in range(WARMUP + 5):
        slowing.on_ok(0.2, slowing.round, was_full=False)
    for _ in range(30):  # the provider queues: latency five times what it was
        slowing.on_ok(1.0, slowing.round, was_full=False)
    assert slowing.cuts >= 1
    assert slowing.limit <= int(32 * SLOW_BETA)


async def test_the_gate_holds_the_cap_hands_places_in_order_and_learns() -> None:
    gate = InFlightGate(4, initial=2)
    first, second = await gate.enter(), await gate.enter()
    assert second.cap_full
    order: list[str] = []

    async def wait(name: str) -> Permit:
        permit = await gate.enter()
        order.append(name)
        return permit

    third = asyncio.create_task(wait("third"))
    fourth = asyncio.create_task(wait("fourth"))
    await _settle()
    assert (gate.held, order) == (2, [])

    gate.leave(first, "rate_limited")  # cut to 1 place: the one left still holds it
    await _settle()
    assert gate.limit == 1
    assert order == []
    gate.leave(second, "ok")
    await _settle()
    assert order == ["third"]
    gate.leave(await third, "ok")
    await _settle()
    gate.leave(await fourth, None)
    assert gate.held == 0


async def test_a_waiter_that_gives_up_leaks_no_place() -> None:
    gate = InFlightGate(1, initial=1)
    held = await gate.enter()
    waiter = asyncio.create_task(gate.enter())
    await _settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.leave(held, None)

    again = await asyncio.wait_for(gate.enter(), 1)
    assert gate.held == 1
    gate.leave(again, None)
    assert gate.held == 0


def test_jitter_of_calls_that_take_microseconds_never_cuts_the_cap() -> None:
    """Scripted or cached answers: their latencies double and halve at random, but a rise of
    a few microseconds says nothing about the provider, and a seeded search must not depend
    on it."""
    cap = ConcurrencyLimit(ceiling=64, initial=16)
    for _ in range(40):
        cap.on_ok(0.00002, cap.round, was_full=False)
    for i in range(40):
        cap.on_ok(0.0004 if i % 2 else 0.0009, cap.round, was_full=False)  # 20-45x the rest
    assert cap.cuts == 0
    assert cap.limit == 16
