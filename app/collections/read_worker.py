"""The process that reads one file into passages: `python -m app.collections.read_worker`,
started by `DocumentReader` (app/collections/reader.py) for each file, so that a hostile file
(a PDF crafted to take minutes or gigabytes) costs a process that is killed, never the service's
event loop, memory or CPU.

Its input (stdin) is one JSON line, the file's name, the read limits and the file's size,
followed by exactly that many bytes; its output (stdout) one JSON object: the document's title,
kind, hash, page count and passages, or the refusal's code and message. Before it reads it
bounds itself: its address space (`RLIMIT_AS`) and its CPU seconds (`RLIMIT_CPU`), given on
its command line; the parent bounds the wall clock and kills it.

It imports only the reader (tools/documents), and the PDF library only when a PDF comes, so it
starts in a few hundredths of a second.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
from dataclasses import asdict
from typing import Any, BinaryIO

from tools.documents.passages import passages
from tools.documents.reading import DocumentRefused, ReadLimits, read_document

MAX_HEADER_BYTES = 64 * 1024
EXIT_TRUNCATED = 3  # the input ended early: the parent went away


def request_header(name: str, limits: ReadLimits, size: int) -> bytes:
    """The JSON line that precedes a file's bytes on the worker's stdin."""
    return json.dumps({"name": name, "limits": asdict(limits), "size": size}).encode() + b"\n"


def read_refusal(code: str, message: str) -> dict[str, Any]:
    """The worker's answer for a file it refuses."""
    return {"ok": False, "code": code, "message": message}


def read_result(name: str, data: bytes, limits: ReadLimits) -> dict[str, Any]:
    """What the worker answers for the file: its passages, or why it is refused. Any failure
    of the reader on the file's content is a refusal: a file no reader takes is corrupt."""
    try:
        document = read_document(name, data, limits)
        cut = passages(document)
    except DocumentRefused as e:
        return read_refusal(e.code, str(e))
    except MemoryError:
        return read_refusal("too_complex", "reading the file needs more memory than it is given")
    except RecursionError:
        return read_refusal("too_complex", "the file is nested too deeply to read")
    except Exception as e:  # a reader library's own failure on a malformed file
        if _limit_reached(e):
            return read_refusal("too_complex", "the file holds more than its reader takes")
        return {
            **read_refusal("corrupt", "the file cannot be read: it is damaged"),
            "error": type(e).__name__,
        }
    return {
        "ok": True,
        "title": document.title,
        "kind": document.kind,
        "sha256": document.sha256,
        "pages": len(document.pages),
        "passages": [[p.page, p.number, p.heading, p.text] for p in cut],
    }


def _limit_reached(error: Exception) -> bool:
    """Whether a reader library stopped at one of its own bounds (pypdf's
    `LimitReachedError`). pypdf is imported only when a PDF is read, never to start the worker:
    it is most of a text file's reading time (0.4 s of 0.6 s of imports)."""
    errors = sys.modules.get("pypdf.errors")
    return errors is not None and isinstance(error, errors.LimitReachedError)


def _bound(memory_bytes: int, cpu_s: int) -> None:
    """This process's own limits: past its address space an allocation fails (MemoryError);
    past its CPU seconds the kernel stops it."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def main(argv: list[str] | None = None) -> int:
    """Read one request from stdin, answer on stdout; the exit code."""
    parser = argparse.ArgumentParser(prog="read_worker")
    parser.add_argument("--memory-bytes", type=int, required=True)
    parser.add_argument("--cpu-s", type=int, required=True)
    args = parser.parse_args(argv)
    # A hostile file can make a reader library warn once per object: none of it is wanted.
    logging.disable(logging.CRITICAL)
    _bound(args.memory_bytes, args.cpu_s)
    stdin = sys.stdin.buffer
    line = stdin.readline(MAX_HEADER_BYTES)
    if not line.endswith(b"\n"):
        return EXIT_TRUNCATED
    header = json.loads(line)
    data = _read_exactly(stdin, int(header["size"]))
    if data is None:
        return EXIT_TRUNCATED
    result = read_result(str(header["name"]), data, ReadLimits(**header["limits"]))
    del data
    try:
        out = json.dumps(result, ensure_ascii=False).encode()
    except MemoryError:
        out = json.dumps(read_refusal("too_large", "the file's text is too long to keep")).encode()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
