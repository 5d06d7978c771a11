"""A cancel that lands in the same turn of the loop as the wake-up a task was waiting for still
cancels it. On Python 3.11 `asyncio.wait_for` loses such a cancel (its inner wait has ended, so
it returns the result instead): a worker's claim loop waiting for queued runs then never
stopped, and a service shut down after a burst of runs hung."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest

from app.runs.claiming import Claimer
from app.runs.following import _wait
from app.runs.live import LiveRun
from app.runs.queue import LocalRunQueue
from app.runs.signals import LocalSignals
from app.store.base import Lease, RunRecord, StoredEvent
from app.store.protocols import RunStore


async def _cancelled_as_woken(wait: Awaitable[object], wake: Callable[[], None]) -> None:
    task = asyncio.ensure_future(wait)
    for _ in range(3):
        await asyncio.sleep(0)  # the task is waiting now
    wake()
    task.cancel()  # same turn of the loop: its wait has ended, its step has not run yet
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_waiting_for_a_queued_run() -> None:
    signals = LocalSignals()
    await _cancelled_as_woken(signals.wait_queued(30.0), signals.run_queued)


async def test_a_follower_waiting_for_a_wake() -> None:
    flag = asyncio.Event()
    await _cancelled_as_woken(_wait(flag, 30.0), flag.set)


async def test_a_reader_waiting_for_a_live_run_s_next_event() -> None:
    live = LiveRun("r1", [StoredEvent(seq=1, type="run_started", data="{}")])

    def grow() -> None:
        asyncio.get_running_loop().create_task(
            live.push(StoredEvent(seq=2, type="node_started", data="{}"))
        )

    task = asyncio.ensure_future(live.wait_after(1, 30.0))
    for _ in range(3):
        await asyncio.sleep(0)
    grow()
    await asyncio.sleep(0)  # the push has notified the reader, which has not run yet
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_worker_s_claim_loop_woken_as_it_is_stopped_stops() -> None:
    signals = LocalSignals()

    async def adopt(record: RunRecord) -> None:
        raise AssertionError("nothing is claimed without room")

    # No room: the loop never asks the store for runs (this test has none).
    claimer = Claimer(
        store=cast(RunStore, None),
        lease=Lease("me", 30.0),
        queue=LocalRunQueue(max_active=0, max_waiting=0),
        signals=signals,
        adopt=adopt,
    )
    await claimer.start()
    for _ in range(3):
        await asyncio.sleep(0)  # the loop waits for a queued run
    signals.run_queued()
    async with asyncio.timeout(5.0):  # before the fix: stuck until the wait's 10 s, forever
        await claimer.stop()


def test_no_module_of_the_service_waits_with_wait_for() -> None:
    # The rule behind the tests above, for every wait: `asyncio.timeout` around the await.
    root = Path(__file__).resolve().parents[2]
    users = [
        str(path.relative_to(root))
        for package in ("agents", "app", "calls", "tools")
        for path in sorted((root / package).rglob("*.py"))
        if "asyncio.wait_for(" in path.read_text(encoding="utf-8")
    ]
    assert users == []
