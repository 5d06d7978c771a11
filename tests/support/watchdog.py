"""The last guard against a test run that never ends.

pytest-timeout interrupts a test once, in its main thread, and stops watching it once the test
has failed. A test whose clean-up then hangs as well (a joined thread that waits on a stream
that never ends, a child process left stopped), or a thread that keeps the interpreter from
exiting, would hold the whole run until CI's own limit with nothing printed. A watchdog thread
of its own gives each test its timeout plus a grace (`watchdog_grace_s`, 120 s), and the run's
exit the grace: past it, every thread's stack is written to the run's stderr and the process
ends with exit code 1."""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections.abc import Generator

import pytest

_WATCHDOG_KEY = pytest.StashKey["Watchdog"]()


class Watchdog:
    """One deadline at a time, watched by a daemon thread."""

    def __init__(self, stderr_fd: int) -> None:
        self._fd = stderr_fd
        self._changed = threading.Condition()
        self._deadline: float | None = None
        self._what = ""
        threading.Thread(target=self._watch, name="test-watchdog", daemon=True).start()

    def arm(self, seconds: float, what: str) -> None:
        with self._changed:
            self._deadline, self._what = time.monotonic() + seconds, what
            self._changed.notify()

    def disarm(self) -> None:
        with self._changed:
            self._deadline = None
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while True:
                if self._deadline is None:
                    self._changed.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                os.write(self._fd, f"\nwatchdog: {self._what} is stuck; stacks:\n".encode())
                faulthandler.dump_traceback(file=self._fd, all_threads=True)
                os._exit(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "watchdog_grace_s",
        "seconds past a test's timeout (or past the run's end) after which the run is ended"
        " with every thread's stack",
        default="120",
    )


def _grace(config: pytest.Config) -> float:
    return float(str(config.getini("watchdog_grace_s")))


def pytest_configure(config: pytest.Config) -> None:
    # A copy of the run's stderr, made before any test's output is captured.
    config.stash[_WATCHDOG_KEY] = Watchdog(os.dup(sys.stderr.fileno()))


def pytest_unconfigure(config: pytest.Config) -> None:
    # From here on only the interpreter's exit is left; a thread that holds it up is stuck.
    if _WATCHDOG_KEY in config.stash:
        config.stash[_WATCHDOG_KEY].arm(_grace(config), "the run's exit")


def timeout_of(item: pytest.Item) -> float:
    """The item's pytest-timeout limit: its `timeout` mark, else the configured default."""
    mark = item.get_closest_marker("timeout")
    if mark is not None:
        limit = mark.args[0] if mark.args else mark.kwargs.get("timeout")
        if limit is not None:
            return float(limit)
    return float(item.config.getini("timeout") or 0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    limit = timeout_of(item)
    if limit <= 0:
        return (yield)
    watchdog = item.config.stash[_WATCHDOG_KEY]
    watchdog.arm(limit + _grace(item.config), item.nodeid)
    try:
        return (yield)
    finally:
        watchdog.disarm()
