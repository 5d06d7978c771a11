"""Waiting in tests for what another process or thread will do: polling with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = 60) -> None:
    """Poll `condition` until it holds; fail naming `what` after the deadline."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)
