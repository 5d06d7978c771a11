"""The in-process run queue: admission bounds and execution slots."""

from __future__ import annotations

import asyncio

import pytest

from app.runs.queue import LocalRunQueue, QueueFull


async def test_free_slots_and_the_waiting_room_bound_admission() -> None:
    queue = LocalRunQueue(max_active=1, max_waiting=1)
    queue.admit()  # will take the free slot
    queue.admit()  # waits

    with pytest.raises(QueueFull):
        queue.admit()
    queue.admit(force=True)  # a resumed run is never refused
    assert queue.waiting == 3


async def test_a_slot_is_held_while_the_run_executes_and_released_after() -> None:
    queue = LocalRunQueue(max_active=1, max_waiting=5)
    queue.admit()
    queue.admit()
    inside = asyncio.Event()
    leave = asyncio.Event()

    async def run() -> None:
        async with queue.slot():
            inside.set()
            await leave.wait()

    first = asyncio.create_task(run())
    await inside.wait()
    second = asyncio.create_task(run())
    await asyncio.sleep(0)  # let the second reach the semaphore

    assert (queue.active, queue.waiting) == (1, 1)
    leave.set()
    await asyncio.gather(first, second)
    assert (queue.active, queue.waiting) == (0, 0)


async def test_a_run_cancelled_while_waiting_gives_its_place_back() -> None:
    queue = LocalRunQueue(max_active=1, max_waiting=0)
    queue.admit()
    hold = asyncio.Event()

    async def run() -> None:
        async with queue.slot():
            await hold.wait()

    first = asyncio.create_task(run())
    await asyncio.sleep(0)
    queue.admit(force=True)
    waiting = asyncio.create_task(run())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)

    assert queue.waiting == 0
    hold.set()
    await first
