"""The SQLite library this process links, set up once before it opens a database.

SQLite counts every allocation it makes under one process-wide mutex (its memory statistics,
`SQLITE_CONFIG_MEMSTATUS`, on unless the build turns them off; Debian's build also omits the
per-connection lookaside allocator, so every small allocation takes that mutex). Two searches
on two connections then queue on it: at 100,000 passages, a search's statement that guesses its
candidates took 1.3 ms alone and 1.1 ms each with two at once, against 0.7 each with the
statistics off (two threads, two connections, on 2 cores). The statistics serve no one
here, and SQLite lets them be turned off only while it is not initialized: the library is shut
down, configured and initialized again, which is safe only while it holds no memory at all (no
connection open, nothing allocated). So it is done once, by the first store to open (the
service opens its store before anything else touches SQLite), and only when SQLite reports no
memory in use; otherwise the library is left as it is and searches merely share that mutex.
"""

from __future__ import annotations

import _sqlite3
import ctypes
import logging
import sqlite3
import threading

logger = logging.getLogger(__name__)

_SQLITE_OK = 0
_CONFIG_MEMSTATUS = 9
_lock = threading.Lock()
_answer: list[bool] = []  # the first call's, once made


def without_memory_statistics() -> bool:
    """Turn SQLite's memory statistics off in this process if nothing holds SQLite memory yet;
    whether they are off after (False where the library cannot be reached through `ctypes` or
    was in use). Tried once per process; later calls return the first call's answer."""
    with _lock:
        if not _answer:
            _answer.append(_configure())
        return _answer[0]


def _configure() -> bool:
    try:
        lib = ctypes.CDLL(_sqlite3.__file__)
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        if lib.sqlite3_memory_used():
            logger.info("sqlite: memory in use at start; its memory statistics stay on")
            return False
        probe = sqlite3.connect(":memory:")
        counted = lib.sqlite3_memory_used() > 0
        probe.close()
        if not counted:
            return True  # this build keeps no statistics
        if lib.sqlite3_memory_used() or lib.sqlite3_shutdown() != _SQLITE_OK:
            return False
        configured = bool(lib.sqlite3_config(_CONFIG_MEMSTATUS, ctypes.c_int(0)) == _SQLITE_OK)
        if lib.sqlite3_initialize() != _SQLITE_OK:
            # Opening a database initializes it again; nothing is lost but the setting.
            logger.warning("sqlite: initializing again failed")
            return False
    except (OSError, AttributeError) as e:
        logger.info("sqlite: library not reachable (%s); its memory statistics stay on", e)
        return False
    logger.info("sqlite: memory statistics %s", "off" if configured else "still on")
    return configured
