"""A `redis-server` of a caller's own on a port of its own (nothing saved to disk), so that a
test or benchmark can kill, freeze and restart it without touching the machine's Redis."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis_server(port: int, directory: Path) -> subprocess.Popen[bytes]:
    """`redis-server` on 127.0.0.1:`port`, answering PING, within 10 s."""
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                return server
        time.sleep(0.05)
    server.kill()
    raise RuntimeError(f"redis-server did not start on port {port}")
