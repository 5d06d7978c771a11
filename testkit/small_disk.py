"""A small tmpfs of a caller's own, to fill: what the full-disk test and the fault benchmark put
the embedded store's data directory on. Mounting needs root (as in CI)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path


def mount_tmpfs(mount: Path, size: str) -> str | None:
    """Mount a tmpfs of `size` (`mount -o size=`, e.g. "24m") on the directory `mount`; None
    when mounted, else why it could not be."""
    mount.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if made.returncode == 0 else (made.stderr.strip() or "mount failed")


def unmount(mount: Path) -> None:
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Write zeros to `filler` until the disk is full (then smaller writes, to its last byte)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler
