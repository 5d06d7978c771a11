"""The deployment tier: a private Docker engine (deploy/offline/engine.sh), the stand-in base
images (deploy/offline/bases.sh), the project's Dockerfile built through compose, and the real
docker-compose.yml brought up with `--wait` plus tests/deploy/compose.test.yml (the Gemini
simulator). The engine is stopped and its network rules removed at the end, whatever failed.

The stack runs two API replicas behind a proxy (`stack.url`) and two workers. A case drives it
with `stack.compose(...)`, `stack.url`, `start_executing(...)` (a run, once it executes),
`follow(...)`, `stack.sql(...)` (a query in the `db` container), `stack.containers(service)`
and `stack.in_replica(index, code)` (Python run inside one API replica, which reaches that
replica alone on its loopback).
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from testkit.events import Event, read_events

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "deploy" / "offline" / "engine.sh"
BASES = ROOT / "deploy" / "offline" / "bases.sh"
WHEELS = ROOT / "deploy" / "offline" / "wheels.sh"
COMPOSE = ROOT / ".cache" / "docker" / "bin" / "docker-compose"
FIGURES_FILE = ROOT / ".cache" / "docker" / "figures.json"
# Debian's client matches the engine (20.10) and builds with the engine's BuildKit.
DOCKER = "/usr/bin/docker"
FILES = ("-f", "docker-compose.yml", "-f", "tests/deploy/compose.test.yml")
SERVICE_IMAGE = "plantree:latest"
SIM_IMAGE = "plantree-simulator:test"
BUILD_TIMEOUT_S = 1800  # a cold build compiles llama.cpp when no wheel was supplied

# One private engine at a time on a machine: two would share the default bridge's name and
# address pools, and each one's clean-up would remove the other's bridges.
ENGINE_LOCK = Path("/run/plantree-docker.lock")

FIGURES: dict[str, float | str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The first test pays for the engine, the bases and the build: the suite's 120 s per test
    # default does not fit a cold build.
    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S + 600))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    FIGURES_FILE.parent.mkdir(parents=True, exist_ok=True)
    FIGURES_FILE.write_text(json.dumps(FIGURES, indent=2) + "\n")
    terminalreporter.section("deployment figures")
    for name, value in FIGURES.items():
        terminalreporter.write_line(f"{name}: {value}")


def run(
    args: Sequence[str],
    env: dict[str, str],
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a command from the project root; its output is in the failure message."""
    done = subprocess.run(
        list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {done.returncode}\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done


@dataclass
class Engine:
    env: dict[str, str]

    def docker(self, *args: str, timeout: float = 300) -> str:
        return run([DOCKER, *args], self.env, timeout).stdout


@dataclass
class Stack:
    engine: Engine
    project: str
    port: int
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def compose(
        self, *args: str, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return run([str(COMPOSE), "-p", self.project, *FILES, *args], self.env, timeout, check)

    def up(self) -> float:
        """`up -d --wait` without building; the seconds until every service is healthy."""
        start = time.monotonic()
        self.compose("up", "-d", "--no-build", "--wait", "--wait-timeout", "180", timeout=240)
        return time.monotonic() - start

    def sql(self, query: str) -> str:
        """One query's rows, unaligned, from psql in the `db` container."""
        args = ("exec", "-T", "db", "psql", "-U", "lats", "-d", "lats", "-Atc", query)
        return self.compose(*args, timeout=60).stdout.strip()

    def containers(self, service: str) -> dict[str, str]:
        """The service's running containers: host name (its id's first 12 digits) to id."""
        ids = self.compose("ps", "-q", service).stdout.split()
        return {cid[:12]: cid for cid in ids}

    def in_replica(self, index: int, code: str, *args: str, timeout: float = 180) -> str:
        """Run Python `code` inside API replica `index` (1-based); what it printed."""
        exec_args = ("exec", "-T", "--index", str(index), "api", "python", "-c", code, *args)
        return self.compose(*exec_args, timeout=timeout).stdout

    def down(self) -> float:
        start = time.monotonic()
        self.compose("down", "--volumes", "--remove-orphans", timeout=120)
        return time.monotonic() - start


def _missing_tools() -> list[str]:
    tools = [Path("/usr/sbin/dockerd"), Path(DOCKER), COMPOSE]
    missing = [str(p) for p in tools if not p.exists()]
    return missing + [t for t in ("debootstrap", "iptables") if shutil.which(t) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _stop_engine() -> None:
    subprocess.run([str(ENGINE), "stop"], cwd=ROOT, timeout=120, check=False)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    missing = _missing_tools()
    if missing or os.geteuid() != 0:
        reason = f"the deployment tier needs root and {missing} (`make test-deploy` installs them)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    lock = ENGINE_LOCK.open("a")
    fcntl.flock(lock, fcntl.LOCK_EX)  # another checkout's deployment tests finish first
    # Stopped by the finalizer; atexit covers an interrupted session, and the Makefile's trap a
    # killed one.
    atexit.register(_stop_engine)
    started = subprocess.run(
        [str(ENGINE), "start"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    if started.returncode != 0:
        _stop_engine()
        pytest.fail(f"the private engine did not start:\n{started.stderr}")
    host = subprocess.run(
        [str(ENGINE), "env"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {**os.environ, "DOCKER_BUILDKIT": "1", "COMPOSE_STATUS_STDOUT": "1"}
    env["DOCKER_HOST"] = host.split("=", 1)[1]
    try:
        yield Engine(env)
    finally:
        _stop_engine()
        lock.close()


@pytest.fixture(scope="session")
def images(engine: Engine) -> Engine:
    """The stand-in bases, then the project's images built through compose."""
    start = time.monotonic()
    run([str(BASES)], engine.env, timeout=1200)
    FIGURES["stand-in bases ready (s)"] = round(time.monotonic() - start, 1)
    run([str(WHEELS)], engine.env, timeout=60)
    wheel = any((ROOT / "deploy" / "wheels").glob("llama_cpp_python-*.whl"))
    FIGURES["llama-cpp-python"] = "prebuilt wheel from the host" if wheel else "built in image"
    probe = Stack(engine, "plantree-build", 0, {**engine.env, "API_PORT": "0"})
    start = time.monotonic()
    probe.compose("build", timeout=BUILD_TIMEOUT_S)
    FIGURES["compose build (s)"] = round(time.monotonic() - start, 1)
    return engine


@pytest.fixture(scope="session")
def stack(images: Engine) -> Iterator[Stack]:
    """The stack up and healthy, under a project name of its own; torn down at the end."""
    port = free_port()
    stack = Stack(images, f"plantree-t{os.getpid()}", port, {**images.env, "API_PORT": str(port)})
    try:
        FIGURES["up --wait, to healthy (s)"] = round(stack.up(), 1)
        yield stack
    finally:
        # Kept for a look after a failure; the next run overwrites it.
        logs = stack.compose("logs", "--no-color", "--tail", "200", check=False)
        (ROOT / ".cache" / "docker" / "stack.log").write_text(logs.stdout + logs.stderr)
        stack.down()


def new_task() -> dict[str, object]:
    """A task that no process has seen: its model calls miss the processes' call caches, so
    the run takes its full time (long enough to be interrupted)."""
    return {
        "task": f"What do the sources say? ({uuid.uuid4().hex[:8]})",
        "max_paths": 3,
        "strategy": "dfs",
    }


def start_executing(url: str, task: dict[str, object]) -> str:
    """A run created through the API, returned once it is executing: once it has written an
    event past the first."""
    with httpx.Client(base_url=url, timeout=60) as client:
        run_id: str = client.post("/runs", json=task).json()["run_id"]
        with client.stream("GET", f"/runs/{run_id}/events") as reply:
            for line in reply.iter_lines():
                if line.startswith("id: ") and int(line[4:]) >= 2:
                    return run_id
    raise AssertionError(f"run {run_id} ended its stream before executing")


def follow(url: str, run_id: str, timeout: float = 120) -> list[Event]:
    """A run's events from the start to its terminal event, read through the API's SSE stream."""
    return read_events(url, run_id, timeout=timeout)
