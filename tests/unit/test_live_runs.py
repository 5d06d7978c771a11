"""A live run's lifecycle is a state machine: cancels, drains and lost leases are transitions,
and the registry is the one owner of the runs this process holds."""

from __future__ import annotations

import asyncio

import pytest

from app.runs.live import IllegalTransition, LiveRun, LiveRuns, Phase


async def _idle(live: LiveRun) -> None:
    live.start()
    await asyncio.Event().wait()  # runs until stopped


async def _launched(lives: LiveRuns, run_id: str = "r1") -> LiveRun:
    live = lives.launch(run_id, [], _idle)
    await asyncio.sleep(0)  # the task starts and takes its slot
    return live


def _assert_cannot_end_or_be_cancelled(live: LiveRun) -> None:
    assert not live.cancel()
    with pytest.raises(IllegalTransition):
        live.end()


async def test_a_run_starts_queued_and_runs_once_it_has_a_slot() -> None:
    lives = LiveRuns()
    live = lives.launch("r1", [], _idle)

    assert live.phase is Phase.QUEUED
    await asyncio.sleep(0)
    assert live.phase is Phase.RUNNING
    assert "r1" in lives
    live.lose()
    await live.wait_closed()


async def test_a_cancel_is_delivered_once_and_the_run_closes_from_cancelling() -> None:
    lives = LiveRuns()
    live = await _launched(lives)

    assert lives.cancel("r1")
    assert lives.cancel("r1")  # repeated by signals and lease renewals: still true, no-op
    await live.wait_closed()

    assert live.phase is Phase.CLOSED
    assert live.closed_from is Phase.CANCELLING
    assert "r1" not in lives
    assert not lives.cancel("r1")  # nothing of that name is held any more


async def test_a_cancel_wins_over_a_later_drain() -> None:
    lives = LiveRuns()
    live = await _launched(lives)

    assert live.cancel()
    live.drain()

    assert live.phase is Phase.CANCELLING  # not given back: the caller's cancel stands
    await live.wait_closed()


async def test_a_draining_run_cannot_be_cancelled_and_is_given_back() -> None:
    lives = LiveRuns()
    live = await _launched(lives)

    assert await lives.drain() == 1

    assert not live.cancel()
    assert live.closed_from is Phase.DRAINING


async def test_a_lost_lease_wins_and_nothing_more_may_be_written() -> None:
    lives = LiveRuns()
    live = await _launched(lives)

    live.cancel()
    live.lose()

    assert live.phase is Phase.LOST
    assert not live.may_write
    assert not live.holds_lease
    with pytest.raises(IllegalTransition):
        live.end()
    await live.wait_closed()
    assert live.closed_from is Phase.LOST


def test_an_ended_run_ignores_a_late_lease_loss_and_cannot_be_cancelled() -> None:
    live = LiveRuns().detached("r1")
    live.end()

    live.lose()

    assert live.phase is Phase.ENDED
    _assert_cannot_end_or_be_cancelled(live)


def test_a_paused_run_neither_writes_nor_holds_its_lease_and_cannot_end_or_be_cancelled() -> None:
    live = LiveRuns().detached("r1")
    live.start()

    live.pause()
    live.lose()  # a late lease check changes nothing: the run is stored waiting

    assert live.phase is Phase.PAUSED
    assert not live.may_write
    assert not live.holds_lease
    _assert_cannot_end_or_be_cancelled(live)


def test_a_stop_delivered_while_queued_wins_over_the_slot() -> None:
    live = LiveRuns().detached("r1")
    live.lose()

    live.start()  # the slot came after the stop: the run does not run

    assert live.phase is Phase.LOST


async def test_a_run_is_live_once_and_may_be_launched_again_after_it_closed() -> None:
    lives = LiveRuns()
    relaunched: list[LiveRun] = []

    def again(closed: LiveRun) -> None:
        if not relaunched:  # a drained run claimed back at once by this process
            relaunched.append(lives.launch(closed.run_id, closed.events, _idle))

    first = lives.launch("r1", [], _idle, after=again)
    with pytest.raises(IllegalTransition):
        lives.launch("r1", [], _idle)
    await asyncio.sleep(0)
    first.drain()
    await first.wait_closed()
    await asyncio.sleep(0)

    assert lives.get("r1") is relaunched[0]
    assert relaunched[0] is not first
    relaunched[0].lose()
    await relaunched[0].wait_closed()


async def test_followers_are_woken_when_the_run_closes() -> None:
    lives = LiveRuns()
    live = await _launched(lives)
    waiting = asyncio.create_task(live.wait_after(0, within_s=5))
    await asyncio.sleep(0)

    live.lose()
    await live.wait_closed()

    assert await waiting == []
    assert live.finished.is_set()
