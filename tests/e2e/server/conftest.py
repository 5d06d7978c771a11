"""Fixtures of the server-process tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.process import ServerProcess, shared_runs_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of shared-run processes: the Gemini simulator's model, one tool."""
    return shared_runs_env(tmp_path)


@pytest.fixture
def procs() -> Iterator[list[ServerProcess]]:
    """Processes a test starts; killed after it."""
    started: list[ServerProcess] = []
    yield started
    for proc in started:
        proc.kill()
