"""Reading a file into passages off the event loop, in a process of its own per file
(app/collections/read_worker.py), bounded in time, memory and output.

Why a process and not a thread: a thread cannot be stopped, so a PDF crafted to take an hour
would hold it (and the GIL's share it takes) for that hour, and a PDF that decompresses to
gigabytes would take the service's own memory with it. A process is given an address space of
its own (`RLIMIT_AS`: past it an allocation fails and the file is refused), CPU seconds, and a
wall clock after which it is killed, and none of the service's secrets in its environment;
whatever it does, the service goes on. Why a new process
per file and not a pool: a pool's worker that was killed or ran out of memory breaks the pool,
and a fresh process holds nothing of the previous file. Starting one costs an interpreter and the
reader's own modules, about 0.05 s of imports (a PDF's library is imported only for a PDF). At
most `concurrency` files are read at once per service process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

from app.collections.read_worker import request_header
from tools.documents.passages import Passage
from tools.documents.reading import DocumentRefused, Kind, ReadLimits, RefusalCode

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]  # where `app` and `tools` are imported from
# What the reading process sees of the service's environment: enough to run Python, never the
# keys and URLs the service holds (a reader library exploited by a file would find none).
CHILD_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
WORKER = "app.collections.read_worker"
STDERR_TAIL = 2048
_REFUSALS = frozenset(get_args(RefusalCode))


@dataclass(frozen=True)
class ReadFile:
    """A file as read: its title, kind, SHA-256, page count and passages."""

    title: str
    kind: Kind
    sha256: str
    pages: int
    passages: list[Passage]


@dataclass(frozen=True, slots=True)
class ReaderBounds:
    """What one file's reading may take: wall-clock seconds and address space (the CPU
    seconds follow from the first)."""

    timeout_s: float
    memory_bytes: int

    @property
    def cpu_s(self) -> int:
        return math.ceil(self.timeout_s) + 1


class DocumentReader:
    """Reads files in worker processes, `concurrency` at once; the others wait their turn."""

    def __init__(self, limits: ReadLimits, bounds: ReaderBounds, concurrency: int) -> None:
        self._limits = limits
        self._bounds = bounds
        self._slots = asyncio.Semaphore(concurrency)
        # The answer holds the text of the passages: at most `max_chars` characters, 4 bytes
        # each in UTF-8, with their JSON around them.
        self._max_answer = 4 * limits.max_chars + 1024 * 1024

    @property
    def limits(self) -> ReadLimits:
        return self._limits

    async def read(self, name: str, data: bytes, *, label: str) -> ReadFile:
        """The file `name` read into passages; raises `DocumentRefused` when it is not read.
        `label` says whose file it is in log lines (`collection=<id>`)."""
        async with self._slots:
            answer = await self._run(name, data, label)
        if not answer.get("ok"):
            if answer.get("error"):
                logger.info("%s: a file was refused: its reader raised %s", label, answer["error"])
            code = answer.get("code")
            if code not in _REFUSALS:
                raise DocumentRefused("corrupt", "the file cannot be read: it is damaged")
            message = str(answer.get("message") or "the file cannot be read")
            raise DocumentRefused(cast(RefusalCode, code), message)
        return ReadFile(
            title=str(answer["title"]),
            kind=answer["kind"],
            sha256=str(answer["sha256"]),
            pages=int(answer["pages"]),
            passages=[
                Passage(page, number, heading, text)
                for page, number, heading, text in answer["passages"]
            ],
        )

    async def _run(self, name: str, data: bytes, label: str) -> dict[str, Any]:
        """One worker process's answer for the file; a refusal for a worker that ran out of
        time, answered too much, or stopped without answering."""
        bounds = self._bounds
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER,
            "--memory-bytes",
            str(bounds.memory_bytes),
            "--cpu-s",
            str(bounds.cpu_s),
            cwd=ROOT,
            env={var: os.environ[var] for var in CHILD_ENV if var in os.environ},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

        async def answered() -> bytes | None:
            out = await _bounded(proc.stdout, self._max_answer)
            if out is None:
                proc.kill()  # it has said too much already: nothing more of it is read
            return out

        try:
            async with asyncio.timeout(bounds.timeout_s):
                out, err, _ = await asyncio.gather(
                    answered(),
                    _tail(proc.stderr, STDERR_TAIL),
                    _feed(proc.stdin, request_header(name, self._limits, len(data)), data),
                )
                code = await proc.wait()
        except TimeoutError:
            raise DocumentRefused(
                "too_slow", f"reading the file took over {bounds.timeout_s:g} seconds"
            ) from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        if out is None:
            raise DocumentRefused("too_large", "the file's text is too long to keep")
        if code == 0 and out:
            try:
                answer: dict[str, Any] = json.loads(out)
                return answer
            except ValueError:
                logger.warning("%s: the document reader answered something that is not JSON", label)
        if code == -signal.SIGXCPU:  # its CPU seconds ran out
            raise DocumentRefused(
                "too_slow", f"reading the file took over {bounds.cpu_s} seconds of CPU"
            )
        logger.warning(
            "%s: the document reader stopped with exit code %s: %s",
            label,
            code,
            err.decode("utf-8", "replace").strip()[-STDERR_TAIL:] or "(nothing on stderr)",
        )
        raise DocumentRefused("corrupt", "the file cannot be read: its reader stopped")


async def _feed(stdin: asyncio.StreamWriter | None, header: bytes, data: bytes) -> None:
    """Write the request (the file's bytes not copied); a worker that stopped early is seen by
    its exit code."""
    assert stdin is not None
    try:
        stdin.write(header)
        stdin.write(data)
        await stdin.drain()
        stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        return


async def _bounded(stream: asyncio.StreamReader | None, limit: int) -> bytes | None:
    """Everything on `stream`, or None once it is over `limit` bytes (read no further)."""
    assert stream is not None
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(256 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _tail(stream: asyncio.StreamReader | None, keep: int) -> bytes:
    """The last `keep` bytes on `stream`; the rest is read and dropped."""
    assert stream is not None
    tail = b""
    while chunk := await stream.read(64 * 1024):
        tail = (tail + chunk)[-keep:]
    return tail
