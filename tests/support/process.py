"""The service as a real process: `python -m app serve` (what `make run` runs)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


class ServerProcess:
    """Starts the server on a free port and collects its log lines."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = {**os.environ, **env}
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.lines: list[str] = []
        self._ready = threading.Event()

    def start(self, timeout_s: float = 60) -> ServerProcess:
        self.lines = []
        self._ready.clear()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", "0"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout_s) or not self.url:
            self.kill()
            raise RuntimeError("server did not start:\n" + "\n".join(self.lines[-30:]))
        return self

    def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())
            match = _LISTENING.search(line)
            if match:
                self.url = match.group(1)
                self._ready.set()
        self._ready.set()  # the process ended

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def terminate(self, timeout_s: float = 60) -> int:
        """SIGTERM and wait for the drain; the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)
