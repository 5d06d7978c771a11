"""A full disk under the embedded SQLite store: a reserve file, given up when the disk fills
so that the runs in flight can still store their ends, and taken again once there is room.

The store keeps `LATS_STORAGE_RESERVE_BYTES` (4 MiB) of its data directory in a file of zeros,
`.reserve`. The first write that fails because the disk is full (SQLite's `SQLITE_FULL`, or
`ENOSPC`) deletes it and puts the store in the *full* state: new runs are refused
(`StorageFull`, HTTP 507 `storage_full`), a run's next event or checkpoint is refused, so each
run in flight ends there with an `error` of code `storage_full`, and those ends are written
into the space the reserve gave back. Each refused write first looks at the free space: once
the disk has room again (twice the reserve free, and at least `ROOM_BYTES`), the reserve is
written again and the store takes runs and their writes. An end that finds no room even so
stops its run on this worker (app/runs/execution.py); it is taken up again from its last
checkpoint once there is room. SQLite rolls a failed transaction back whole, so nothing stored
before is damaged.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, TypeVar

from agents.errors import StorageFull

logger = logging.getLogger(__name__)

T = TypeVar("T")
WriteKind = Literal["new", "grow", "end", "other"]
"""How a write stands on a full disk (`DiskSpace.write`)."""
RESERVE_NAME = ".reserve"
RESERVE_BYTES = 4 * 1024 * 1024
ROOM_BYTES = 1024 * 1024
"""The least free space that counts as room again, whatever the reserve (even none)."""
_CHUNK = 64 * 1024


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` (or what caused it) says the disk is full."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, sqlite3.Error) and getattr(seen, "sqlite_errorcode", None) == (
            sqlite3.SQLITE_FULL
        ):
            return True
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            return True
        if isinstance(seen, StorageFull):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class DiskSpace:
    """The reserve of one data directory and whether the store is full (see the module)."""

    def __init__(self, directory: Path, reserve_bytes: int = RESERVE_BYTES) -> None:
        self.directory = directory
        self.reserve_bytes = reserve_bytes
        self.full = False

    @property
    def reserve(self) -> Path:
        return self.directory / RESERVE_NAME

    def open(self) -> None:
        """At start: the reserve in place, or the store full if it cannot be written."""
        if not self._write_reserve():
            self._mark_full("the reserve could not be written at start")

    async def write(self, write: Callable[[], Awaitable[T]], kind: WriteKind = "other") -> T:
        """`write()` under the full-disk rules: `new` work (runs, threads) is refused while
        the disk is full and `grow` (a run's events and checkpoints, commands) while it is
        full, each unless the disk has room again; an `end` (a run's end or pause) is tried
        again once after the write that found the disk full gave up the reserve; the rest is
        always tried. A write that finds the disk full raises `StorageFull`."""
        if kind == "new":
            self.refuse_new()
        elif kind == "grow" and self.full and not self._room_again():
            raise StorageFull("the store's disk is full; the run cannot be written")
        try:
            return await write()
        except Exception as e:
            if not is_disk_full(e):
                raise
            full = self.filled(e)
            if kind != "end":
                raise full from e
        try:
            return await write()
        except Exception as e:
            if is_disk_full(e):
                raise self.filled(e) from e
            raise

    def filled(self, error: BaseException) -> StorageFull:
        """A write failed on a full disk: give up the reserve; the error to raise."""
        if not self.full:
            self._mark_full(str(error))
        return StorageFull("the store's disk is full; the run cannot be written")

    def refuse_new(self) -> None:
        """Before new work is stored: raises `StorageFull` while full, unless the disk has
        room again (then the reserve is taken back first)."""
        if self.full and not self._room_again():
            raise StorageFull("the store's disk is full; free space in its data directory")

    def _room_again(self) -> bool:
        """While full: whether the disk has room again; if so the reserve is written back
        and the store is no longer full."""
        room = max(2 * self.reserve_bytes, ROOM_BYTES)
        if shutil.disk_usage(self.directory).free < room or not self._write_reserve():
            return False
        self.full = False
        logger.info("storage: the disk has room again; runs are taken")
        return True

    def _mark_full(self, why: str) -> None:
        self.full = True
        with contextlib.suppress(FileNotFoundError):
            self.reserve.unlink()
        logger.warning(
            "storage: the disk of %s is full (%s); new runs are refused, runs in flight end "
            "with storage_full",
            self.directory,
            why,
        )

    def _write_reserve(self) -> bool:
        if self.reserve_bytes <= 0:
            return True
        try:
            if self.reserve.exists() and self.reserve.stat().st_size >= self.reserve_bytes:
                return True
            with self.reserve.open("wb") as out:
                left = self.reserve_bytes
                while left > 0:
                    out.write(b"\0" * min(_CHUNK, left))
                    left -= _CHUNK
                out.flush()
        except OSError as e:
            with contextlib.suppress(FileNotFoundError):
                self.reserve.unlink()
            if e.errno == errno.ENOSPC:
                return False
            raise
        return True
