"""What the storm tests assert of every storm, and of every run's history."""

from __future__ import annotations

from testkit.events import Event
from testkit.storm import StormResult, check_history


def assert_whole(result: StormResult) -> None:
    """Every run of a storm has a whole history."""
    problems = result.problems
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40])


def assert_whole_history(url: str, run_id: str, events: list[Event]) -> str | None:
    """The history rules for one run's streamed `events`, asserted; its terminal type."""
    history = check_history(url, run_id, events)
    assert history.whole, (run_id, history.problems)
    return history.terminal
