"""An upload's body read as it streams in (app/collections/uploads.py): the files with their
checked names, a file refused as soon as it passes the limit (the rest of the body is never
pulled), and every malformed body refused with a code."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import pytest

from app.collections.errors import UploadRefused
from app.collections.uploads import close_all, media_type, read_body, read_files
from app.store.collection_base import DocumentTooLarge
from tools.documents.reading import DocumentRefused

BOUNDARY = "unit-boundary"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def part(filename: str | None, data: bytes) -> bytes:
    disposition = 'form-data; name="file"' + (f'; filename="{filename}"' if filename else "")
    return f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"


END = f"--{BOUNDARY}--\r\n".encode()


class Body:
    """A body in chunks of `size` bytes, counting the chunks the reader pulled."""

    def __init__(self, data: bytes, size: int = 1024) -> None:
        self.chunks = [data[i : i + size] for i in range(0, len(data), size)]
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


async def read(
    body: Iterable[bytes] | bytes, max_file_bytes: int = 10_000, max_files: int = 3
) -> list[tuple[str, bytes]]:
    data = body if isinstance(body, bytes) else b"".join(body)
    files = await read_files(
        CONTENT_TYPE, aiter(Body(data)), max_file_bytes=max_file_bytes, max_files=max_files
    )
    try:
        return [(f.name, await f.data()) for f in files]
    finally:
        close_all(files)


async def test_the_files_of_an_upload_are_read_with_their_names() -> None:
    files = await read([part("a.md", b"# A\n\ntext"), part("b.txt", b"more"), END])

    assert files == [("a.md", b"# A\n\ntext"), ("b.txt", b"more")]


async def test_a_file_past_a_megabyte_is_spooled_to_disk_and_read_back_whole() -> None:
    data = bytes(range(256)) * 8192  # 2 MiB
    files = await read([part("big.bin.txt", data), END], max_file_bytes=4 * 1024 * 1024)

    assert files == [("big.bin.txt", data)]


async def test_a_file_over_the_limit_is_refused_without_pulling_the_rest_of_the_body() -> None:
    body = Body(part("big.txt", b"a" * 1_000_000) + END, size=1024)

    with pytest.raises(DocumentTooLarge, match=r"'big\.txt' is over the limit of 10,000 bytes"):
        await read_files(CONTENT_TYPE, aiter(body), max_file_bytes=10_000, max_files=3)

    assert body.pulled <= 12  # 10,000 bytes and the part's headers, in 1 KiB chunks
    assert len(body.chunks) > 900


async def test_a_bad_file_name_is_refused_before_its_bytes_are_read() -> None:
    body = Body(part("../secrets.txt", b"a" * 100_000) + END, size=1024)

    with pytest.raises(DocumentRefused, match="must not name a folder") as refused:
        await read_files(CONTENT_TYPE, aiter(body), max_file_bytes=1_000_000, max_files=3)

    assert refused.value.code == "bad_name"
    assert body.pulled == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([part(None, b"field value"), END], "must be a file"),
        ([part(f"{n}.txt", b"x") for n in range(4)] + [END], "at most 3 files"),
        ([part("a.txt", b"cut short")], "ended before its closing boundary"),
        ([END], "holds no file"),
        ([b"this is not multipart at all\r\n"], "not valid multipart"),
    ],
    ids=["a field", "too many files", "cut short", "no file", "not multipart"],
)
async def test_a_malformed_upload_is_refused(body: list[bytes], message: str) -> None:
    with pytest.raises(UploadRefused, match=message):
        await read(body)


async def test_a_multipart_type_without_a_boundary_is_refused() -> None:
    with pytest.raises(UploadRefused, match="boundary"):
        await read_files("multipart/form-data", aiter(Body(END)), max_file_bytes=10, max_files=1)


def test_the_media_type_is_read_without_its_parameters() -> None:
    assert media_type("Multipart/Form-Data; boundary=x") == "multipart/form-data"
    assert media_type("application/json; charset=utf-8") == "application/json"
    assert media_type(None) == ""


async def test_a_json_body_is_read_to_its_limit_and_no_further() -> None:
    body = Body(b"x" * 5000, size=1000)

    assert await read_body(aiter(Body(b"{}")), 10) == b"{}"
    with pytest.raises(DocumentTooLarge, match="over the limit of 2,000 bytes"):
        await read_body(aiter(body), 2000)
    assert body.pulled == 3
