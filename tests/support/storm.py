"""What the storm tests assert of every storm."""

from __future__ import annotations

from testkit.storm import StormResult


def assert_whole(result: StormResult) -> None:
    """Every run of a storm has a whole history."""
    problems = result.problems
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40])
