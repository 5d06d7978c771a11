"""A benchmark server as a child process (`python -m bench.serve`), with its memory and CPU
read from /proc."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
_TICKS = os.sysconf("SC_CLK_TCK")


def proc_status_kib(pid: int, field: str) -> int:
    """A `kB` field of /proc/<pid>/status, e.g. VmRSS (resident now) or VmHWM (peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(f"{field} not in /proc/{pid}/status")


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return (int(fields[11]) + int(fields[12])) / _TICKS


async def stop_process(
    proc: asyncio.subprocess.Process, sig: int, label: str, within_s: float = 30.0
) -> None:
    """Send `sig` to a running `proc` and wait for it to exit; killed after `within_s`."""
    if proc.returncode is not None:
        return
    proc.send_signal(sig)
    try:
        await asyncio.wait_for(proc.wait(), within_s)
    except TimeoutError:
        logger.warning("%s pid=%s ignored signal %s; killing it", label, proc.pid, sig)
        proc.kill()
        await proc.wait()


class ServerProcess:
    """`async with ServerProcess([...]) as server:` starts the bench server (`python -m
    <module>`), waits until it listens, and stops it (SIGTERM, then SIGKILL) on exit."""

    def __init__(
        self,
        args: list[str],
        log_path: Path,
        start_timeout_s: float = 60.0,
        module: str = "bench.serve",
        root: Path = ROOT,
    ) -> None:
        self.args = args
        self.module = module
        self.root = root  # the checkout whose code the process runs
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.url = ""
        self._log: IO[bytes] | None = None

    async def __aenter__(self) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            self.module,
            *self.args,
            cwd=self.root,
            env={**os.environ, "PYTHONPATH": str(self.root)},
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log,
        )
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), self.start_timeout_s)
        except TimeoutError:
            await self._stop()
            raise RuntimeError(f"bench server did not start; see {self.log_path}") from None
        if not line:
            await self._stop()
            raise RuntimeError(f"bench server exited at start; see {self.log_path}")
        info = json.loads(line)
        self.pid = int(info["pid"])
        self.url = f"http://127.0.0.1:{info['port']}"
        logger.info("bench server pid=%s at %s", self.pid, self.url)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stop()

    async def _stop(self) -> None:
        if self.proc is not None:
            await stop_process(self.proc, signal.SIGTERM, "bench server")
        if self._log is not None:
            self._log.close()
            self._log = None

    def rss_kib(self) -> int:
        return proc_status_kib(self.pid, "VmRSS")

    def peak_rss_kib(self) -> int:
        return proc_status_kib(self.pid, "VmHWM")

    def cpu_s(self) -> float:
        return proc_cpu_s(self.pid)
