"""The one SSE reader: frames as the service writes them, comments, multi-line data."""

from __future__ import annotations

from app.http.sse import Frame, frame, frames, stream_error
from app.store.base import StoredEvent


def _lines(raw: bytes) -> list[str]:
    return raw.decode().split("\n")


def test_the_reader_reads_back_what_the_service_frames() -> None:
    written = frame(StoredEvent(seq=7, type="plan", data='{"steps":["a"]}'))

    assert list(frames(_lines(written + b": heartbeat\n\n" + written))) == [
        Frame(7, "plan", '{"steps":["a"]}'),
        Frame(7, "plan", '{"steps":["a"]}'),
    ]


def test_a_terminal_error_frame_has_no_id() -> None:
    [read] = frames(
        _lines(stream_error("r1", "stream_failed", "the run's events could not be read"))
    )

    assert (read.id, read.event, read.json()["code"]) == (None, "error", "stream_failed")


def test_data_lines_are_joined_and_an_event_without_a_name_is_a_message() -> None:
    assert list(frames(["data: one", "data: two", "", "", "id: x", "data: 3", ""])) == [
        Frame(None, "message", "one\ntwo"),
        Frame(None, "message", "3"),
    ]


def test_an_unfinished_event_at_the_end_of_the_stream_is_not_read() -> None:
    assert list(frames(["id: 1", "event: plan", "data: {}"])) == []
