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
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deploy import (
    BASES,
    BUILD_TIMEOUT_S,
    COMPOSE,
    DOCKER,
    ENGINE,
    ENGINE_LOCK,
    FIGURES,
    FIGURES_FILE,
    ROOT,
    WHEELS,
    Engine,
    Stack,
    free_port,
    run,
)


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


def _missing_tools() -> list[str]:
    tools = [Path("/usr/sbin/dockerd"), Path(DOCKER), COMPOSE]
    missing = [str(p) for p in tools if not p.exists()]
    return missing + [t for t in ("debootstrap", "iptables") if shutil.which(t) is None]


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
