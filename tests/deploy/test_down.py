"""`docker compose down` of a fresh stack (the proxy, two API replicas, two workers, Postgres,
Redis and the simulator) stops every service in seconds: PID 1 is an init that hands SIGTERM to
the server or the worker, which drains and exits."""

from __future__ import annotations

import os

from tests.support.deploy import FIGURES, Engine, Stack, free_port


def test_compose_down_completes_in_under_ten_seconds(images: Engine) -> None:
    port = free_port()
    stack = Stack(images, f"plantree-d{os.getpid()}", port, {**images.env, "API_PORT": str(port)})
    try:
        stack.up()
        states = stack.compose("ps", "--format", "{{.Service}} {{.State}}").stdout
    finally:
        seconds = stack.down()
    FIGURES["down (s)"] = round(seconds, 1)

    services = ["proxy", "api", "api", "worker", "worker", "db", "redis", "gemini-sim"]
    assert sorted(states.strip().splitlines()) == sorted(f"{name} running" for name in services)
    assert seconds < 10
