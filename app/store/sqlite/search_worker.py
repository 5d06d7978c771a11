"""A process that runs the embedded store's full-text searches for the process that started it
(app/store/sqlite/search_processes.py): it opens its own reading connection to the store's file
and answers each search it is sent, one at a time, until the other end closes.

Frames both ways are `search_processes.frame`: a 4-byte big-endian length, then a pickle. It
sends `("ready",)` once its connection is open, then for each query (`SearchQuery`)
`("ok", rows)` with the search's rows, or `("error", message)` when SQLite failed it. Started as
`python -m app.store.sqlite.search_worker --fd N --path FILE`, the socket's end inherited as
file descriptor N. It writes nothing to its standard output; its log goes to standard error.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import socket
import sqlite3
from pathlib import Path
from typing import Any

from app.store.passage_index import SearchQuery, search
from app.store.sqlite.db import INDEX, read_plan, searcher
from app.store.sqlite.library import without_memory_statistics
from app.store.sqlite.search_processes import HEADER, frame


def serve(channel: socket.socket, path: Path) -> None:
    """Answer the searches `channel` brings until its other end closes."""
    without_memory_statistics()  # nothing has touched SQLite in this process yet
    conn = searcher(path)
    incoming = channel.makefile("rb")
    try:
        channel.sendall(frame(("ready",)))
        while header := incoming.read(HEADER.size):
            if len(header) < HEADER.size:
                return
            body = incoming.read(HEADER.unpack(header)[0])
            query = SearchQuery(*pickle.loads(body))
            try:
                reply: tuple[Any, ...] = ("ok", read_plan(conn, search(INDEX, query)))
            except sqlite3.Error as e:
                reply = ("error", f"{type(e).__name__}: {e}")
            channel.sendall(frame(reply))
    except (BrokenPipeError, ConnectionResetError):
        return  # the store closed or its process ended
    finally:
        incoming.close()
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--path", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with socket.socket(fileno=args.fd) as channel:
        serve(channel, args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
