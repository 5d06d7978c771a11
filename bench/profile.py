"""Sampling profiles of the benchmark server with py-spy, summarised per thread.

py-spy reads the target's memory from outside (`--nonblocking`: without pausing it), so the
profiled server runs at full speed. It records every thread, idle ones too (`--idle
--threads`), so the summary can tell how busy each thread was: the event loop (busy = not
waiting in `select`), each SQLite connection's worker thread (aiosqlite; busy = running a
statement, not waiting for the next), the default executor's threads. For the event loop it
also lists what the busy samples were doing, by package and by function.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import shutil
import signal
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import thread as futures_thread
from pathlib import Path
from typing import Any, TypedDict

import aiosqlite.core

from bench.process import stop_process

logger = logging.getLogger(__name__)

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_THREAD = re.compile(r"^thread \((?P<tid>\w+)\)(?:: (?P<name>.*))?$")
_PROJECT = ("agents", "app", "tools", "bench", "tests")
_WAITS = ("EpollSelector.select", "Condition.wait", "Event.wait", "Semaphore.acquire")
# py-spy names files relative to their sys.path entry, and LangGraph's are namespace packages.
_LANGGRAPH = ("pregel", "graph", "channels", "checkpoint", "_internal", "managed", "runtime")


class Share(TypedDict):
    name: str
    share: float


class ThreadLoad(TypedDict):
    thread: str
    samples: int
    busy: float  # share of this thread's samples spent working


class ProfileSummary(TypedDict):
    samples: int  # of the event loop thread
    threads: list[ThreadLoad]
    loop_busy: float
    loop_by_package: list[Share]  # inclusive, over the loop's busy samples
    loop_by_function: list[Share]  # self, over the loop's busy samples
    loop_hotspots: list[Share]  # inclusive, over the loop's busy samples (HOTSPOTS)


# Named parts of the service's work: a label and the frame texts that mark it (inclusive).
HOTSPOTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LangGraph supersteps (pregel)", ("pregel/",)),
    ("LangChain callbacks and run config", ("callbacks/manager.py", "runnables/config.py")),
    ("pydantic (validation, serialisation, repr)", ("pydantic/",)),
    ("executor agent graph (create_agent)", ("create_agent",)),
    ("hand-offs to SQLite connection threads (aiosqlite)", ("aiosqlite/",)),
    ("SSE and HTTP (uvicorn, starlette)", ("uvicorn/", "starlette/")),
    (
        "events: run store writes, live buffers",
        ("RunWriter.emit", "app/store/", "app/runs/live.py"),
    ),
    ("checkpointer (AsyncSqliteSaver)", ("checkpoint/sqlite/",)),
    ("scripted models (the benchmark's double)", ("testkit/", "BaseChatModel._serialized")),
)


def py_spy() -> Path | None:
    """The py-spy binary installed beside this interpreter (the `bench` dependency group)."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.exists():
        return beside
    found = shutil.which("py-spy")
    return Path(found) if found else None


def _queue_wait_line(function: Callable[..., Any]) -> int:
    """The line where a worker-thread loop blocks for its next job (`….get(…)`)."""
    lines, start = inspect.getsourcelines(function)
    return next((start + i for i, text in enumerate(lines) if ".get(" in text), -1)


_QUEUE_WAITS = {
    ("_connection_worker_thread", _queue_wait_line(aiosqlite.core._connection_worker_thread)),
    ("_worker", _queue_wait_line(futures_thread._worker)),
}


def package_of(path: str) -> str:
    """The top-level package of a source file as py-spy names it: `langgraph`, `asyncio`, …"""
    parts = Path(path).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            rest = parts[parts.index(marker) + 1 :]
            return rest[0].removesuffix(".py") if rest else marker
    for index, part in enumerate(parts):
        if re.fullmatch(r"python3\.\d+", part) and index + 1 < len(parts):
            return parts[index + 1].removesuffix(".py")
    if not parts:
        return "?"
    top = parts[0].removesuffix(".py")  # py-spy shows paths relative to sys.path
    return "langgraph" if top in _LANGGRAPH else top


def _frame(text: str) -> tuple[str, str, int]:
    """(function, package, line) of one collapsed-stack frame."""
    match = _FRAME.match(text.strip())
    if not match:
        return text.strip(), "?", -1
    return match.group("func"), package_of(match.group("file")), int(match.group("line") or -1)


def _thread_label(frame: str) -> str | None:
    match = _THREAD.match(frame.strip())
    if not match:
        return None
    name = match.group("name") or f"thread {match.group('tid')}"
    if name.startswith("asyncio_"):
        return "default executor threads"
    if name.startswith("AnyIO worker thread"):
        return "AnyIO worker threads"
    if "_connection_worker_thread" in name:
        return f"SQLite connection {name.split(' ')[0]}"
    return name


def _idle(func: str, line: int) -> bool:
    return func in _WAITS or (func, line) in _QUEUE_WAITS


def _callback(frames: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """The frames of the callback the event loop runs (below its dispatch), so that the
    loop's own frames, present in every sample, do not swamp the shares."""
    for index in range(len(frames) - 1, -1, -1):
        if frames[index][0] in ("Handle._run", "BaseEventLoop._run_once"):
            return frames[index + 1 :] or frames[index:]
    return frames


def summarize(raw: str, top: int = 12) -> ProfileSummary:
    """Per-thread busy shares and the event loop's hot spots, from py-spy's collapsed stacks
    (`record --format raw --idle --threads`)."""
    samples: Counter[str] = Counter()
    busy: Counter[str] = Counter()
    threads_seen: defaultdict[str, set[str]] = defaultdict(set)
    loop_pkg: Counter[str] = Counter()
    loop_fn: Counter[str] = Counter()
    loop_hot: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        head, *rest = stack.split(";")
        label = _thread_label(head) or "MainThread"
        if _thread_label(head) is None:
            rest = [head, *rest]
        threads_seen[label].add(head)
        frames = [_frame(f) for f in rest if f]
        samples[label] += count
        if not frames or _idle(frames[-1][0], frames[-1][2]):
            continue
        busy[label] += count
        if label == "MainThread":
            leaf = frames[-1]
            loop_fn[f"{leaf[0]} [{leaf[1]}]"] += count
            for pkg in {p for _, p, _ in _callback(frames)}:
                loop_pkg[pkg] += count
            for name, marks in HOTSPOTS:
                if any(m in stack for m in marks):
                    loop_hot[name] += count
    loop_samples = samples["MainThread"]
    loop_busy = busy["MainThread"]

    def shares(counter: Counter[str]) -> list[Share]:
        return [
            {"name": name, "share": n / loop_busy if loop_busy else 0.0}
            for name, n in counter.most_common(top)
        ]

    threads: list[ThreadLoad] = []
    for label, n in samples.most_common():
        per_thread = n / max(1, len(threads_seen[label]))
        threads.append(
            {"thread": label, "samples": round(per_thread), "busy": busy[label] / n if n else 0.0}
        )
    return {
        "samples": loop_samples,
        "threads": threads,
        "loop_busy": loop_busy / loop_samples if loop_samples else 0.0,
        "loop_by_package": shares(loop_pkg),
        "loop_by_function": shares(loop_fn),
        "loop_hotspots": shares(loop_hot),
    }


class Profiler:
    """`async with Profiler(pid, out):` records the process until the block ends."""

    def __init__(self, pid: int, out: Path, rate: int = 100) -> None:
        self.pid = pid
        self.out = out
        self.rate = rate
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Profiler:
        binary = py_spy()
        if binary is None:
            raise RuntimeError("py-spy is not installed (make install adds the bench group)")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = await asyncio.create_subprocess_exec(
            str(binary),
            "record",
            "--pid",
            str(self.pid),
            "--rate",
            str(self.rate),
            "--format",
            "raw",
            "--output",
            str(self.out),
            "--nonblocking",
            "--idle",
            "--threads",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.sleep(0.5)  # py-spy attaches before the load starts
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.proc is not None:
            # py-spy writes its output on SIGINT
            await stop_process(self.proc, signal.SIGINT, "py-spy")
