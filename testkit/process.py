"""The service as real processes: `python -m app serve` (what `make run` runs), `serve
--no-worker` and `worker`, each with its own log, started and ready-checked the same way; the
environment they share when they run against the Gemini simulator. Used by the tests that
start the service and by the storm benchmark."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_LISTENING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")
_WORKER_READY = re.compile(r"worker owner=(\S+) ready")
_OWNER = re.compile(r"owner=(\S+) started")


class ServerProcess:
    """One `python -m app …` process (`serve` by default) on a free port; `url` once an HTTP
    one listens, `owner` its worker id, `lines` its log."""

    def __init__(self, env: Mapping[str, str], args: Sequence[str] = ("serve",)) -> None:
        self.env = {**os.environ, **env}
        self.args = list(args)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.owner = ""
        self.lines: list[str] = []
        self._ready = threading.Event()

    @property
    def http(self) -> bool:
        return self.args[0] == "serve"

    def start(self, timeout_s: float = 60) -> ServerProcess:
        self.lines = []
        self._ready.clear()
        cmd = [sys.executable, "-m", "app", *self.args]
        if self.http:
            cmd += ["--host", "127.0.0.1", "--port", "0"]
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout_s) or (self.http and not self.url):
            self.kill()
            raise RuntimeError("process did not start:\n" + "\n".join(self.lines[-30:]))
        return self

    def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())
            if owner := _OWNER.search(line):
                self.owner = owner.group(1)
            if listening := _LISTENING.search(line):
                self.url = listening.group(1)
                self._ready.set()
            elif not self.http and _WORKER_READY.search(line):
                self._ready.set()
        self._ready.set()  # the process ended

    def log(self) -> str:
        return "\n".join(self.lines)

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


def start_side_by_side(
    procs: list[ServerProcess], env: Mapping[str, str], *commands: Sequence[str]
) -> list[ServerProcess]:
    """Start processes side by side (each start is mostly imports), all ready. Each is added
    to `procs` before it starts, so the caller can kill them all whatever happens."""
    batch = [ServerProcess(env, args) for args in commands]
    procs.extend(batch)
    with ThreadPoolExecutor(len(batch)) as pool:
        return list(pool.map(lambda proc: proc.start(timeout_s=180), batch))


def shared_runs_env(work_dir: Path) -> dict[str, str]:
    """The environment of processes that share runs: the real Gemini client (its base URL,
    the simulator's, is set by the caller), `local_docs` over a one-file folder as the one
    tool, short heartbeats, grace and lease, so that cancels, drains and take-overs are quick."""
    docs = work_dir / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "sources.md").write_text("# Sources\n\nThe sources agree on the main result.\n")
    return {
        "GOOGLE_API_KEY": "simulated-key",
        "LATS_MODEL": "google_genai:gemini-2.5-flash",
        "LATS_TOOLS": "local_docs",
        "LATS_LOCAL_DOCS_DIR": str(docs),
        "LATS_DATA_DIR": str(work_dir / "data"),
        "LATS_MODEL_RETRY_BASE_DELAY_S": "0",
        "LATS_MODEL_RPS": "0",
        "LATS_SSE_HEARTBEAT_S": "1",
        "LATS_SHUTDOWN_GRACE_S": "1",
        "LATS_LEASE_TTL_S": "3",
    }
