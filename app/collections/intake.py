"""How documents come into a collection, as the settings bound it: the reader (a bounded
process per file), the most files an upload holds and the bytes its body may hold, and the URL
fetcher where fetching is allowed. Built once per app (`create_app`) and shared by its
requests."""

from __future__ import annotations

from dataclasses import dataclass

from app.collections.fetching import UrlFetcher
from app.collections.reader import DocumentReader, ReaderBounds
from app.collections.uploads import MULTIPART_OVERHEAD
from app.settings import Settings
from tools.documents.reading import ReadLimits


@dataclass(frozen=True)
class DocumentIntake:
    """How documents come in: the reader and its bounds, the most files an upload holds, and
    the URL fetcher (None: documents are not fetched by URL)."""

    reader: DocumentReader
    max_files: int
    fetcher: UrlFetcher | None

    @classmethod
    def from_settings(cls, settings: Settings) -> DocumentIntake:
        """The intake the `LATS_DOCUMENT_*` settings describe."""
        limits = ReadLimits(
            max_bytes=settings.document_max_bytes,
            max_pages=settings.document_max_pages,
            max_seconds=settings.document_read_timeout_s,
        )
        bounds = ReaderBounds(
            timeout_s=settings.document_read_timeout_s,
            memory_bytes=settings.document_read_memory_mb * 1024 * 1024,
        )
        fetcher = (
            UrlFetcher(
                allow_private=settings.document_url_allow_private,
                timeout_s=settings.document_url_timeout_s,
                max_bytes=settings.document_max_bytes,
            )
            if settings.document_urls
            else None
        )
        return cls(
            DocumentReader(limits, bounds, settings.document_readers),
            settings.document_max_files,
            fetcher,
        )

    @property
    def max_file_bytes(self) -> int:
        return self.reader.limits.max_bytes

    @property
    def upload_bytes(self) -> int:
        """The most bytes an upload's body may hold: its files at their limit, with their
        multipart headers."""
        return self.max_files * (self.max_file_bytes + MULTIPART_OVERHEAD)

    @property
    def json_bytes(self) -> int:
        """The most bytes a JSON document body may hold: a file's, with room for its title."""
        return self.max_file_bytes + MULTIPART_OVERHEAD
