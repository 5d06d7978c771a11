"""A user's file read into pages of text: PDF (through pypdf, page by page, numbered as the
reader numbers them), DOCX (Word, through the standard library: `docx_text`; one page unless it
holds explicit page breaks), HTML, Markdown and plain text. Pure: bytes in, `ReadDocument` out,
or a `DocumentRefused` with a code and a sentence a user can act on.

What a file is comes from its bytes, not its name: a ZIP archive (a DOCX, or anything else)
named `.pdf` is refused, as is a PDF named `.txt` read as text; a ZIP archive is read only when
it is named `.docx` (as a Word document: one without `word/document.xml` is refused), and a
password-protected DOCX (an OLE file, not a ZIP) named `.docx` is refused as encrypted. Every
read is bounded (`ReadLimits`): bytes, pages, extracted characters and seconds, and for a DOCX
its uncompressed XML and XML elements; a limit passed refuses the whole document, so a store
never holds part of one.
"""

from __future__ import annotations

import hashlib
import io
import logging
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from tools.documents.docx_text import DocxRefused, docx_text, is_encrypted_package, is_ole
from tools.documents.html_text import HtmlTooComplex, html_text

logger = logging.getLogger(__name__)

Kind = Literal["pdf", "docx", "html", "markdown", "text"]
RefusalCode = Literal[
    "empty",
    "too_large",
    "bad_name",
    "unsupported_type",
    "corrupt",
    "encrypted",
    "no_text",
    "too_many_pages",
    "too_slow",
    "too_complex",
]

_MARKDOWN_SUFFIXES = (".md", ".markdown")
_TEXT_SUFFIXES = (".txt", ".text", ".rst", ".csv", ".log")
_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_DOCX_SUFFIX = ".docx"
READ_SUFFIXES = frozenset(
    (".pdf", _DOCX_SUFFIX, *_HTML_SUFFIXES, *_MARKDOWN_SUFFIXES, *_TEXT_SUFFIXES)
)
"""The file name endings of the kinds that are read (a folder's files are picked by them)."""
MAX_NAME_CHARS = 255


class DocumentRefused(ValueError):
    """A file that is not read: `code` says why (for an API's error code), the message in a
    sentence."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Bounds of one read (the service's settings give them)."""

    max_bytes: int = 25 * 1024 * 1024
    max_pages: int = 2000
    max_chars: int = 20_000_000
    max_seconds: float = 120.0
    max_html_elements: int = 200_000
    max_docx_xml_bytes: int = 128 * 1024 * 1024
    """The most bytes of a DOCX's `word/document.xml` uncompressed (a ZIP bomb is refused)."""
    max_docx_elements: int = 2_000_000
    """The most XML elements of a DOCX's text (Word writes about ten to fifty a paragraph)."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page's text; `number` from 1 for a paged document, None for one that has none."""

    number: int | None
    text: str


@dataclass(frozen=True)
class ReadDocument:
    """A file as text: its title, kind, pages and the SHA-256 of its bytes (the same content
    uploaded twice is found by it)."""

    title: str
    kind: Kind
    sha256: str
    pages: list[Page] = field(default_factory=list)

    @property
    def chars(self) -> int:
        return sum(len(page.text) for page in self.pages)


def clean_name(name: str) -> str:
    """A file name as it is kept and shown; refuses one with a path separator, a control
    character or a `..`, and an empty or overlong one."""
    if not name or len(name) > MAX_NAME_CHARS:
        raise DocumentRefused("bad_name", f"a file name must have 1 to {MAX_NAME_CHARS} characters")
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith(".."):
        raise DocumentRefused("bad_name", "a file name must not name a folder or a path")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        raise DocumentRefused("bad_name", "a file name must not hold control characters")
    return name.strip()


def kind_of(name: str, data: bytes) -> Kind:
    """What the bytes are. The name only tells text kinds apart (Markdown, HTML, text) and a
    ZIP archive that is a DOCX (named `.docx`) from one that is not; a PDF is a PDF whatever
    its name, and another archive or binary file is refused."""
    head = data[:1024].lstrip()
    lowered = name.lower()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if lowered.endswith(".pdf"):
        raise DocumentRefused("corrupt", "the file is named .pdf but is not a PDF")
    if lowered.endswith(_DOCX_SUFFIX):
        if data.startswith(b"PK\x03\x04"):
            return "docx"
        if is_encrypted_package(data):
            raise DocumentRefused(
                "encrypted", "the Word document is password-protected; upload it unlocked"
            )
        if is_ole(data):
            raise DocumentRefused(
                "unsupported_type",
                "the file is an older Word document (.doc) or another OLE file named .docx; "
                "save it as .docx",
            )
        raise DocumentRefused("corrupt", "the file is named .docx but is not a Word document")
    if data.startswith(b"PK\x03\x04") or b"\x00" in data[:8192]:
        raise DocumentRefused(
            "unsupported_type",
            "the file is a binary or archive format; PDF, DOCX, HTML, Markdown and text are read",
        )
    sniff = head[:256].lower()
    if lowered.endswith(_HTML_SUFFIXES) or sniff.startswith((b"<!doctype html", b"<html")):
        return "html"
    if lowered.endswith(_MARKDOWN_SUFFIXES):
        return "markdown"
    if lowered.endswith(_TEXT_SUFFIXES) or "." not in lowered.rsplit("/", 1)[-1]:
        return "text"
    raise DocumentRefused(
        "unsupported_type",
        f"{name!r} is not a kind of file that is read: PDF, DOCX, HTML, Markdown or text",
    )


def read_document(name: str, data: bytes, limits: ReadLimits | None = None) -> ReadDocument:
    """Read `data` (the file `name`) into pages, or refuse it (`DocumentRefused`)."""
    limits = limits or ReadLimits()
    name = clean_name(name)
    if not data.strip():
        raise DocumentRefused("empty", "the file is empty")
    if len(data) > limits.max_bytes:
        raise DocumentRefused(
            "too_large", f"the file is over the limit of {limits.max_bytes:,} bytes"
        )
    kind = kind_of(name, data)
    digest = hashlib.sha256(data).hexdigest()
    stem = name.rsplit(".", 1)[0] if "." in name else name
    if kind == "pdf":
        title, pages = _pdf(data, limits)
        return ReadDocument(title or stem, kind, digest, pages)
    if kind == "docx":
        title, pages = _docx(data, limits)
        return ReadDocument(title or stem, kind, digest, pages)
    text = _decoded(data)
    if kind == "html":
        try:
            title, body = html_text(
                text, max_chars=limits.max_chars, max_elements=limits.max_html_elements
            )
        except HtmlTooComplex as e:
            raise DocumentRefused("too_complex", f"the page is too complex to read: {e}") from e
        return ReadDocument(title or stem, kind, digest, _one_page(body))
    if len(text) > limits.max_chars:
        raise DocumentRefused("too_large", f"the text is over {limits.max_chars:,} characters")
    return ReadDocument(stem, kind, digest, _one_page(text.strip()))


def _one_page(text: str) -> list[Page]:
    if not text.strip():
        raise DocumentRefused("no_text", "the file holds no readable text")
    return [Page(None, text)]


def _decoded(data: bytes) -> str:
    """Text bytes as text: UTF-8 (with or without its mark), else Latin-1, which reads any
    byte (a text file in an older encoding stays readable, if imperfectly)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _docx(data: bytes, limits: ReadLimits) -> tuple[str, list[Page]]:
    """(title, pages) of a DOCX: one page without a number, or pages numbered from 1 when it
    holds explicit page breaks."""
    try:
        title, texts = docx_text(
            data,
            max_xml_bytes=limits.max_docx_xml_bytes,
            max_elements=limits.max_docx_elements,
            max_chars=limits.max_chars,
            max_seconds=limits.max_seconds,
        )
    except DocxRefused as e:
        raise DocumentRefused(e.code, str(e)) from e
    if len(texts) > limits.max_pages:
        raise DocumentRefused(
            "too_many_pages",
            f"the Word document has {len(texts):,} pages, over the limit of {limits.max_pages:,}",
        )
    if not any(text.strip() for text in texts):
        raise DocumentRefused("no_text", "the Word document holds no text")
    if len(texts) == 1:
        return title, [Page(None, texts[0])]
    return title, [Page(number, text) for number, text in enumerate(texts, start=1)]


def _pdf(data: bytes, limits: ReadLimits) -> tuple[str, list[Page]]:
    """(title, pages) of a PDF, page by page within the limits."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    started = time.monotonic()
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise DocumentRefused("encrypted", "the PDF is encrypted; upload it unlocked")
        count = len(reader.pages)
    except DocumentRefused:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as e:
        raise DocumentRefused("corrupt", "the PDF cannot be read: it is damaged") from e
    if count == 0:
        raise DocumentRefused("no_text", "the PDF has no pages")
    if count > limits.max_pages:
        raise DocumentRefused(
            "too_many_pages", f"the PDF has {count:,} pages, over the limit of {limits.max_pages:,}"
        )
    pages: list[Page] = []
    chars = 0
    for number, page in enumerate(reader.pages, start=1):
        if time.monotonic() - started > limits.max_seconds:
            raise DocumentRefused(
                "too_slow", f"reading the PDF took over {limits.max_seconds:g} seconds"
            )
        try:
            # A glyph the reader cannot map can come out as NUL, which no store keeps as text.
            text = (page.extract_text() or "").replace("\x00", "")
        except (PdfReadError, ValueError, KeyError, TypeError, OSError) as e:
            raise DocumentRefused("corrupt", f"page {number} of the PDF is damaged") from e
        chars += len(text)
        if chars > limits.max_chars:
            raise DocumentRefused("too_large", f"the text is over {limits.max_chars:,} characters")
        pages.append(Page(number, text.strip()))
    if not any(page.text for page in pages):
        raise DocumentRefused(
            "no_text",
            "the PDF has no text layer (a scan?): it would be searched empty; upload a PDF "
            "with text, or its text",
        )
    title = ""
    try:
        metadata = reader.metadata
        title = str(metadata.get("/Title") or "").strip() if metadata is not None else ""
    except (PdfReadError, ValueError, KeyError, TypeError):
        logger.debug("a PDF's metadata could not be read; its file name is its title")
    return title, pages
