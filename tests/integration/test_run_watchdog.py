"""The test run's last guard: a test whose clean-up hangs past its timeout and the grace ends
the whole run with every thread's stack, instead of holding it until CI's limit. A real pytest
process over a test that hangs in a thread its teardown joins."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HANGING = """
import threading

import pytest


@pytest.fixture
def joined():
    forever = threading.Event()
    thread = threading.Thread(target=forever.wait, name="never-ends")
    thread.start()
    yield
    thread.join()  # what an executor's shutdown does


def test_fine():
    pass


def test_hangs_in_its_teardown(joined):
    raise AssertionError("the test fails; its clean-up never ends")
"""


@pytest.mark.timeout(60)
def test_a_hang_past_the_timeout_ends_the_run_with_every_stack(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.watchdog"]\n')
    (tmp_path / "test_hanging.py").write_text(textwrap.dedent(HANGING))
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 1\nwatchdog_grace_s = 1\n")
    done = _pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "watchdog: test_hanging.py::test_hangs_in_its_teardown is stuck" in done.stderr
    assert "in join" in done.stderr, done.stderr  # the stuck stack, written out
    assert "test_hanging.py" in done.stderr, done.stderr
    assert done.stdout.startswith(".F"), done.stdout  # the test before it ran and passed


@pytest.mark.timeout(60)
def test_a_thread_that_holds_up_the_exit_ends_the_run_too(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.watchdog"]\n')
    (tmp_path / "test_left.py").write_text(
        "import threading\n\n"
        "def test_leaves_a_thread():\n"
        "    threading.Thread(target=threading.Event().wait, name='left-behind').start()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 30\nwatchdog_grace_s = 1\n")
    done = _pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
    assert "watchdog: the run's exit is stuck" in done.stderr, done.stderr


def _pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """A pytest process over `folder`, with the project importable."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=45,
    )
