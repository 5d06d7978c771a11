"""`lats solve` as a real process in-process mode on a pseudo-terminal, its model the real
Gemini client against the simulator: what a person sees, and what `--json` prints."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ROOT, shared_runs_env

TASK = ["solve", "What do the sources say?", "--max-paths", "2", "--strategy", "mcts"]
LIBRARY_LINES = ("HTTP Request:", "AFC is enabled")
# Cursor and erase sequences the live line is drawn with, and the spinner's colour.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Transcript:
    code: int
    screen: str  # all the terminal received, escape sequences removed
    stderr: str  # when stderr was not the terminal


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("cli")
    with GeminiSimulator(research_scenario()) as sim:
        yield {
            **shared_runs_env(work),
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "TERM": "xterm-256color",
        }


def on_terminal(
    args: Sequence[str], env: dict[str, str], *, stderr_too: bool = True, timeout_s: float = 90
) -> Transcript:
    """Run `lats args` with its stdout (and stderr, with `stderr_too`) on a new 120x40
    pseudo-terminal; what it showed once it exited."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal if stderr_too else subprocess.PIPE,
    )
    os.close(terminal)
    received = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: every copy of the terminal side is closed
                break
            if not chunk:
                break
            received += chunk
        code = proc.wait(timeout=max(1, deadline - time.monotonic()))
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        os.close(controller)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = received.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return Transcript(code, ANSI.sub("", text), stderr)


@pytest.fixture(scope="module")
def quiet(env: dict[str, str]) -> Transcript:
    return on_terminal(TASK, env)


def test_without_v_no_library_log_lines_reach_the_terminal(quiet: Transcript) -> None:
    assert quiet.code == 0, quiet.screen[-2000:]
    assert "★ path n1 → n1.1 has an answer" in quiet.screen
    for line in LIBRARY_LINES:
        assert line not in quiet.screen
    assert " INFO " not in quiet.screen  # plantree's own INFO lines stay back too


def test_with_v_the_library_log_lines_are_shown(env: dict[str, str]) -> None:
    shown = on_terminal([*TASK, "-v"], env)

    assert shown.code == 0, shown.screen[-2000:]
    for line in LIBRARY_LINES:
        assert line in shown.screen
    assert "★ path n1 → n1.1 has an answer" in shown.screen


def test_on_a_terminal_a_progress_line_counts_against_the_budgets(quiet: Transcript) -> None:
    assert "paths 1/2 · model calls" in quiet.screen
    assert re.search(
        r"paths 2/2 · model calls \d+/150 · tokens [\d,]+/2,000,000 · \d+s", quiet.screen
    )
    # The line is gone before the answer and costs print below the tree.
    answer = quiet.screen.rindex("\nanswer:\n")
    assert all(line.start() < answer for line in re.finditer(r"paths \d+/\d+ ·", quiet.screen))
    assert "answer via Summarise them" in quiet.screen[answer:]
    assert re.search(
        r"\nstop: max_paths · model calls \d+ · tokens \d+\+\d+", quiet.screen[answer:]
    )


def test_json_prints_only_json_lines_ending_with_the_terminal_event(env: dict[str, str]) -> None:
    # stdout is a terminal, so no progress line may be drawn on it either.
    out = on_terminal([*TASK, "--json"], env, stderr_too=False)

    assert out.code == 0, out.stderr
    events = [json.loads(line) for line in out.screen.splitlines() if line]
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "done"
    assert [e for e in events if e["type"] in ("done", "error", "cancelled")] == events[-1:]
    assert len({e["run_id"] for e in events}) == 1


def test_json_to_a_reader_that_stops_early_ends_without_a_traceback(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", *TASK, "--json"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["type"] == "run_started"
    proc.stdout.close()  # as `| head -1` does
    _, err = proc.communicate(timeout=90)

    assert proc.returncode == 1
    assert b"Traceback" not in err
