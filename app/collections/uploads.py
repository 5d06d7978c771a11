"""An upload's body read as it streams in, to a bound: the files of a `multipart/form-data`
body (each spooled to a temporary file past 1 MiB, refused the moment it passes the per-file
limit, its name checked before a byte of it is kept), or a JSON body of a bounded size.

Nothing here holds an unbounded body: a file over the limit is refused while the rest of it is
still unread, and so are a file too many and a part that is not a file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from tempfile import SpooledTemporaryFile
from typing import TYPE_CHECKING

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from app.collections.errors import UploadRefused
from app.store.collection_base import DocumentTooLarge
from tools.documents.reading import DocumentRefused, clean_name

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

SPOOL_BYTES = 1024 * 1024  # a file's bytes in memory before they go to a temporary file
MULTIPART_OVERHEAD = 64 * 1024  # a part's boundary and headers, with room to spare
MAX_HEADER_BYTES = 8 * 1024
MAX_SHOWN_NAME = 80


def shown(name: str) -> str:
    """A file's name as a message quotes it: escaped, and cut to a readable length."""
    text = repr(name)
    return text if len(text) <= MAX_SHOWN_NAME else text[: MAX_SHOWN_NAME - 3] + "..."


@dataclass
class UploadedFile:
    """One file of an upload: its checked name and its bytes, spooled."""

    name: str
    # Open for as long as the upload is handled: `close_all` closes it.
    spool: SpooledTemporaryFile[bytes] = field(
        default_factory=lambda: SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
    )
    size: int = 0

    @property
    def on_disk(self) -> bool:
        return bool(getattr(self.spool, "_rolled", False))

    async def data(self) -> bytes:
        """The whole file (within the per-file limit); read in a thread once on disk."""
        if not self.on_disk:
            self.spool.seek(0)
            return self.spool.read()

        def read() -> bytes:
            self.spool.seek(0)
            return self.spool.read()

        return await asyncio.to_thread(read)


@dataclass
class _Parts:
    """The parser's callbacks: what they found, kept for the loop that feeds the parser (the
    callbacks are synchronous; the loop writes the data, in a thread once a file is on disk)."""

    max_file_bytes: int
    max_files: int
    files: list[UploadedFile] = field(default_factory=list)
    pending: list[tuple[UploadedFile, bytes]] = field(default_factory=list)
    header_name: bytes = b""
    header_value: bytes = b""
    disposition: bytes = b""
    current: UploadedFile | None = None
    open_part: bool = False
    ended: bool = False

    def on_part_begin(self) -> None:
        self.disposition = b""
        self.current = None
        self.open_part = True

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]
        if len(self.header_value) > MAX_HEADER_BYTES:
            raise UploadRefused("a part's header is too long")

    def on_header_end(self) -> None:
        if self.header_name.strip().lower() == b"content-disposition":
            self.disposition = self.header_value
        self.header_name, self.header_value = b"", b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.disposition)
        if b"filename" not in options:
            raise UploadRefused("every part of the upload must be a file (with a filename)")
        if len(self.files) >= self.max_files:
            raise UploadRefused(f"an upload holds at most {self.max_files} files")
        raw = options[b"filename"].decode("utf-8", "replace")
        try:
            name = clean_name(raw)
        except DocumentRefused as e:
            raise DocumentRefused(e.code, f"{shown(raw)}: {e}") from e
        self.current = UploadedFile(name)
        self.files.append(self.current)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        file = self.current
        if file is None:
            raise UploadRefused("the upload's parts have no headers")
        file.size += end - start
        if file.size > self.max_file_bytes:
            raise DocumentTooLarge(
                f"{shown(file.name)} is over the limit of {self.max_file_bytes:,} bytes a file"
            )
        self.pending.append((file, data[start:end]))

    def on_part_end(self) -> None:
        self.open_part = False

    def on_end(self) -> None:
        self.ended = True


def media_type(content_type: str | None) -> str:
    """The media type of a `Content-Type` header, lower case, without its parameters."""
    kind, _ = parse_options_header(content_type or "")
    return kind.decode("latin-1")


@contextmanager
def _closing(files: list[UploadedFile]) -> Iterator[None]:
    try:
        yield
    except BaseException:
        for file in files:
            file.spool.close()
        raise


async def read_files(
    content_type: str, body: AsyncIterator[bytes], *, max_file_bytes: int, max_files: int
) -> list[UploadedFile]:
    """The files of a `multipart/form-data` body, read as it streams in; the caller closes
    them (`close_all`). Raises `UploadRefused`, `DocumentTooLarge` (a file over the limit, as
    soon as it passes it) or `DocumentRefused` (a bad file name), and then keeps nothing."""
    _, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if not boundary:
        raise UploadRefused("a multipart upload needs a boundary in its Content-Type")
    parts = _Parts(max_file_bytes, max_files)
    callbacks: MultipartCallbacks = {
        "on_part_begin": parts.on_part_begin,
        "on_part_data": parts.on_part_data,
        "on_part_end": parts.on_part_end,
        "on_header_field": parts.on_header_field,
        "on_header_value": parts.on_header_value,
        "on_header_end": parts.on_header_end,
        "on_headers_finished": parts.on_headers_finished,
        "on_end": parts.on_end,
    }
    with _closing(parts.files):
        try:
            parser = MultipartParser(boundary, callbacks)
        except ValueError as e:
            raise UploadRefused("the upload's boundary is not valid") from e
        async for chunk in body:
            try:
                parser.write(chunk)
            except MultipartParseError as e:
                raise UploadRefused("the upload is not valid multipart/form-data") from e
            for file, data in parts.pending:
                if file.on_disk:
                    await asyncio.to_thread(file.spool.write, data)
                else:
                    file.spool.write(data)
            parts.pending.clear()
        if not parts.ended or parts.open_part:
            raise UploadRefused("the upload ended before its closing boundary")
        if not parts.files:
            raise UploadRefused("the upload holds no file")
    return parts.files


def close_all(files: list[UploadedFile]) -> None:
    """Drop the files' spooled bytes."""
    for file in files:
        file.spool.close()


async def read_body(body: AsyncIterator[bytes], limit: int) -> bytes:
    """A whole body of at most `limit` bytes; `DocumentTooLarge` as soon as it passes it."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in body:
        size += len(chunk)
        if size > limit:
            raise DocumentTooLarge(f"the body is over the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
