"""Every event stream ends with exactly one terminal frame, whatever fails: the store failing
while a run is followed, or the run deleted while it is followed (real SQLite store, the real
follower and the route's framing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.http.routes.runs import _framed
from app.http.sse import Frame, frames
from app.runs.following import Follower
from app.runs.live import LiveRuns
from app.runs.signals import LocalSignals
from app.store.base import StoredEvent
from app.store.protocols import EventLog, RunStore
from app.store.sqlite.store import SqliteRunStore
from tests.support.runs import held_run, replaced


class FailingReads:
    """A real event log whose reads fail after the first."""

    def __init__(self, inner: EventLog) -> None:
        self._inner = inner
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def after(self, run_id: str, after: int, limit: int | None = None) -> list[StoredEvent]:
        self.reads += 1
        if self.reads > 1:
            raise OSError("disk I/O error")
        return await self._inner.after(run_id, after, limit)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteRunStore]:
    store = await SqliteRunStore.open(tmp_path / "runs.sqlite")
    yield store
    await store.close()


def _follower(store: RunStore) -> Follower:
    return Follower(store, LocalSignals(), LiveRuns(), heartbeat_s=0.01)


async def _read(stream: AsyncIterator[bytes]) -> list[Frame]:
    """The stream's events, read with the one SSE reader."""
    body = b"".join([chunk async for chunk in stream]).decode()
    return list(frames(body.splitlines()))


async def test_a_store_failing_mid_follow_ends_the_stream_with_one_error_frame(
    store: SqliteRunStore,
) -> None:
    run_id = await held_run(store, "elsewhere")
    failing = replaced(store, events=FailingReads(store.events))

    read = await _read(_framed(run_id, _follower(failing).follow(run_id, 0)))

    assert [f.event for f in read] == ["run_started", "plan", "error"]
    end = read[-1].json()
    assert (end["type"], end["code"], end["run_id"]) == ("error", "stream_failed", run_id)
    assert read[-1].id is None  # not a stored event: a re-join does not skip past it
    assert "disk" not in read[-1].data  # no internal detail reaches the client


async def test_a_run_deleted_while_followed_ends_the_stream_with_one_error_frame(
    store: SqliteRunStore,
) -> None:
    run_id = await held_run(store, "elsewhere", ended=True)
    stream = _framed(run_id, _follower(store).follow(run_id, 3))
    assert await store.runs.delete(run_id)

    read = await _read(stream)

    assert [f.event for f in read] == ["error"]
    assert read[0].json()["code"] == "run_deleted"


async def test_a_followed_run_that_ends_sends_its_own_terminal_event_only(
    store: SqliteRunStore,
) -> None:
    run_id = await held_run(store, "elsewhere", ended=True)

    read = await _read(_framed(run_id, _follower(store).follow(run_id, 0)))

    assert [f.event for f in read] == ["run_started", "plan", "done"]
