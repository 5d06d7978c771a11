"""The fault benchmark's client: it follows a run to the run's end, re-joining after the last id
it received whenever the stream ends without it."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

import bench.faults
from bench.faults import follow
from testkit.events import Event

# What the server streams on each connection: the first breaks with `stream_failed` (an `error`
# frame without an id: its store was away), the second reads on from the last id.
STREAMS: dict[int, list[Event]] = {
    0: [
        (1, "run_started", {}),
        (2, "node_started", {}),
        (0, "error", {"code": "stream_failed", "message": "the run's events could not be read"}),
    ],
    2: [(3, "node_finished", {}), (4, "done", {"answer": "a"})],
}


def test_a_stream_that_fails_is_re_joined_and_the_run_followed_to_its_own_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []

    def streams(url: str, run_id: str, after: int = 0, timeout: float = 60) -> Iterator[Event]:
        asked.append(after)
        yield from STREAMS[after]

    monkeypatch.setattr(bench.faults, "iter_events", streams)
    monkeypatch.setattr(bench.faults, "REJOIN_PAUSE_S", 0.0)

    got = follow(lambda: ["http://x"], "r", random.Random(0), give_up=lambda: False)

    assert asked == [0, 2]
    assert [seq for seq, _, _ in got.events] == [1, 2, 3, 4]
    assert got.events[-1][1] == "done"
    assert (got.rejoins, got.failure) == (1, None)
    assert got.ended_at is not None


def test_the_run_s_own_error_event_ends_the_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    def streams(url: str, run_id: str, after: int = 0, timeout: float = 60) -> Iterator[Event]:
        yield (1, "run_started", {})
        yield (2, "error", {"code": "model_failed", "message": "the model failed"})

    monkeypatch.setattr(bench.faults, "iter_events", streams)

    got = follow(lambda: ["http://x"], "r", random.Random(0), give_up=lambda: False)

    assert [kind for _, kind, _ in got.events] == ["run_started", "error"]
    assert got.rejoins == 0
