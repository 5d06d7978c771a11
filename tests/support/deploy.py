"""The deployment tier's helpers: the private engine's and the stack's handles, and how a case
drives a run through the stack's API (tests/deploy/conftest.py holds the fixtures)."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from app.http.sse import frames
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


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
            for frame in frames(reply.iter_lines()):
                if (frame.id or 0) >= 2:
                    return run_id
    raise AssertionError(f"run {run_id} ended its stream before executing")


def follow(url: str, run_id: str, timeout: float = 120) -> list[Event]:
    """A run's events from the start to its terminal event, read through the API's SSE stream."""
    return read_events(url, run_id, timeout=timeout)
