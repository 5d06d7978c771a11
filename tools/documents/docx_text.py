"""A Word document (DOCX) as plain text with its headings, read with the standard library only
(`zipfile` and `xml.etree.ElementTree`; python-docx is not used: it needs lxml).

A DOCX is a ZIP archive; its text is `word/document.xml`, its title `docProps/core.xml`'s
`dc:title` when there is one. Each paragraph (`w:p`) is one paragraph of the text, made of its
runs' text (`w:t`), a `w:tab` as a tab, a `w:br` or `w:cr` as a line break (and a
non-breaking hyphen as `-`). A paragraph whose style (`w:pStyle`) is `Title` or `Heading1` to
`Heading9` is written as a Markdown heading (`#` to `######`), so the passage splitter cuts on
it as it does in Markdown and HTML.
A table's cells are paragraphs like any other, in reading order (row by row, cell by cell).
Deleted and moved-away text of tracked changes, and the second copy of a text box that Word
keeps for older readers (`mc:Fallback`), are left out.

Pages: a DOCX has no fixed pages (where a page ends depends on the program that lays it out),
so a document is one page, as HTML and Markdown are, unless it holds explicit page breaks
(`<w:br w:type="page"/>`, what Ctrl+Enter writes): each starts a new page, numbered from 1, so a
citation names the page where the author fixed one. Word's own notes of where it last laid a
page out (`w:lastRenderedPageBreak`) and section breaks are not page breaks here.

The file is untrusted, so everything is bounded before it costs anything: the declared
uncompressed size of each part read is checked before it is opened, and it is read with a hard
cap all the same (a header can lie); XML holding a document type or entity declarations is
refused before it is parsed (no entity is ever expanded); the elements, the characters of text
and the seconds of a read are bounded. The XML is parsed as a stream (no tree is built), so
memory stays small whatever the size of the document.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
import zlib
from typing import Literal
from xml.etree.ElementTree import ParseError, XMLParser

DocxCode = Literal[
    "unsupported_type", "corrupt", "encrypted", "too_large", "too_complex", "too_slow"
]

DOCUMENT_PART = "word/document.xml"
PROPERTIES_PART = "docProps/core.xml"
MAX_PROPERTIES_BYTES = 1024 * 1024
MAX_PROPERTIES_ELEMENTS = 10_000
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""The first bytes of an OLE compound file: a password-protected DOCX (its package encrypted
inside one), or an older Word document (.doc)."""
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")  # the stream of an encrypted DOCX

_CHUNK = 1024 * 1024
_CLOCK_EVERY = 4096  # elements between two looks at the clock
_DECLARATIONS = tuple(
    marker.encode(encoding)
    for marker in ("<!DOCTYPE", "<!ENTITY")
    for encoding in ("ascii", "utf-16-le", "utf-16-be")
)
_OVERLAP = max(len(marker) for marker in _DECLARATIONS) - 1

_W = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",  # transitional (Word's own)
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # strict
)
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def _w(*names: str) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for ns in _W for name in names)


_P = _w("p")
_R = _w("r")
_T = _w("t")
_TAB = _w("tab")
_BREAKS = _w("br", "cr")
_BR = _w("br")
_HYPHEN = _w("noBreakHyphen")
_P_STYLE = _w("pStyle")
_P_PR = _w("pPr")
_TYPE = frozenset(f"{{{ns}}}type" for ns in _W)
_VAL = frozenset(f"{{{ns}}}val" for ns in _W)
# Parts of the body whose text is not the document's: deleted and moved-away text, a former
# paragraph style, and the copy of a text box kept for readers without DrawingML.
_SKIPPED = _w("del", "moveFrom", "pPrChange") | {f"{{{_MC}}}Fallback"}
_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_MAX_HASHES = 6  # the passage splitter's deepest heading


class DocxRefused(ValueError):
    """A DOCX that is not read: `code` says why (the reader's refusal codes), the message in a
    sentence."""

    def __init__(self, code: DocxCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_ole(data: bytes) -> bool:
    """Whether the bytes are an OLE compound file (an encrypted DOCX, an older .doc)."""
    return data.startswith(OLE_SIGNATURE)


def is_encrypted_package(data: bytes) -> bool:
    """Whether an OLE compound file holds an encrypted Office package (a DOCX saved with a
    password) rather than an older Word document."""
    return is_ole(data) and _ENCRYPTED_PACKAGE in data


def docx_text(
    data: bytes,
    *,
    max_xml_bytes: int,
    max_elements: int,
    max_chars: int,
    max_seconds: float,
) -> tuple[str, list[str]]:
    """(title, pages) of a DOCX: the title of its properties (empty when none) and the text of
    each page (one page unless it holds explicit page breaks), paragraphs apart by a blank
    line, headings as Markdown headings. Raises `DocxRefused`."""
    started = time.monotonic()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as e:
        raise DocxRefused("corrupt", "the Word document cannot be read: it is damaged") from e
    with archive:
        try:
            document = archive.getinfo(DOCUMENT_PART)
        except KeyError:
            raise DocxRefused(
                "unsupported_type",
                f"the file is named .docx but is not a Word document: the ZIP archive holds no "
                f"{DOCUMENT_PART}",
            ) from None
        body = _Body(max_elements, max_chars, max_seconds, started)
        _parse(archive, document, body, max_xml_bytes)
        title = ""
        properties = archive.NameToInfo.get(PROPERTIES_PART)
        if properties is not None:
            found = _Title(MAX_PROPERTIES_ELEMENTS)
            _parse(archive, properties, found, MAX_PROPERTIES_BYTES)
            title = _SPACES.sub(" ", "".join(found.parts)).strip()
    return title, body.finished()


def _parse(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: _Target, max_bytes: int
) -> None:
    """Feed the part `info` to an XML parser writing to `target`, chunk by chunk: its declared
    size checked first, what it really holds cut at `max_bytes` whatever the header says, and
    every chunk looked at for declarations before the parser sees it."""
    if info.flag_bits & 0x1:
        raise DocxRefused("encrypted", "the Word document is encrypted; upload it unlocked")
    if info.file_size > max_bytes:
        raise DocxRefused(
            "too_complex",
            f"the Word document's {info.filename} is {info.file_size:,} bytes uncompressed, "
            f"over the limit of {max_bytes:,}",
        )
    parser = XMLParser(target=target)
    read = 0
    tail = b""
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(min(_CHUNK, max_bytes + 1 - read)):
                read += len(chunk)
                if read > max_bytes:
                    raise DocxRefused(
                        "too_complex",
                        f"the Word document's {info.filename} holds more than {max_bytes:,} "
                        "bytes uncompressed (more than its header says)",
                    )
                _refuse_declarations(tail + chunk)
                parser.feed(chunk)
                tail = chunk[-_OVERLAP:]
        parser.close()
    except ParseError as e:
        raise DocxRefused(
            "corrupt", f"the Word document cannot be read: its {info.filename} is damaged"
        ) from e
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as e:
        # A wrong CRC or size (a header that lies), damaged compressed data, a compression
        # method zipfile does not read.
        raise DocxRefused("corrupt", "the Word document cannot be read: it is damaged") from e


def _refuse_declarations(data: bytes) -> None:
    """Refuses XML with a document type or an entity declaration (in any encoding an XML
    parser reads: ASCII-compatible, UTF-16), before any of it is parsed: Word never writes
    one, and entities are how a small file expands into gigabytes."""
    upper = data.upper()
    if any(marker in upper for marker in _DECLARATIONS):
        raise DocxRefused(
            "too_complex",
            "the Word document holds XML declarations (a DOCTYPE or entities), which are not read",
        )


class _Target:
    """What the XML parser writes to: elements counted and bounded; no document type."""

    def __init__(self, max_elements: int) -> None:
        self.max_elements = max_elements
        self.elements = 0

    def count(self) -> None:
        self.elements += 1
        if self.elements > self.max_elements:
            raise DocxRefused(
                "too_complex",
                f"the Word document has more than {self.max_elements:,} XML elements",
            )

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.count()

    def end(self, tag: str) -> None:
        return None

    def data(self, data: str) -> None:
        return None

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        # Never reached (the bytes are looked at first); here should that look ever miss one.
        raise DocxRefused("too_complex", "the Word document holds a DOCTYPE, which is not read")

    def close(self) -> None:
        return None


class _Title(_Target):
    """The text of `dc:title` in the document's properties."""

    def __init__(self, max_elements: int) -> None:
        super().__init__(max_elements)
        self.parts: list[str] = []
        self.size = 0
        self.inside = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.count()
        if tag == _DC_TITLE:
            self.inside += 1

    def end(self, tag: str) -> None:
        if tag == _DC_TITLE:
            self.inside -= 1

    def data(self, data: str) -> None:
        if self.inside and self.size < MAX_PROPERTIES_BYTES:
            self.parts.append(data)
            self.size += len(data)


class _Paragraph:
    """An open `w:p`: its text so far and its heading level (None: not a heading)."""

    __slots__ = ("level", "parts", "styled")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.level: int | None = None
        self.styled = False


class _Body(_Target):
    """`word/document.xml` as pages of paragraphs."""

    def __init__(self, max_elements: int, max_chars: int, max_seconds: float, started: float):
        super().__init__(max_elements)
        self.max_chars = max_chars
        self.max_seconds = max_seconds
        self.started = started
        self.pages: list[list[str]] = [[]]
        self.open: list[_Paragraph] = []  # a text box's paragraphs open inside their anchor's
        self.skipping = 0
        self.runs = 0
        self.in_text = 0
        self.in_paragraph_properties = 0
        self.chars = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.count()
        if self.elements % _CLOCK_EVERY == 0 and time.monotonic() - self.started > self.max_seconds:
            raise DocxRefused(
                "too_slow", f"reading the Word document took over {self.max_seconds:g} seconds"
            )
        if self.skipping:
            self.skipping += 1
        elif tag in _SKIPPED:
            self.skipping = 1
        elif tag in _P:
            self.open.append(_Paragraph())
        elif not self.open:
            return
        elif tag in _T:
            self.in_text += 1
        elif tag in _R:
            self.runs += 1
        elif tag in _P_PR:
            self.in_paragraph_properties += 1
        elif tag in _P_STYLE and self.in_paragraph_properties:
            self._style(attrib)
        elif self.runs and tag in _BR and _attribute(attrib, _TYPE) == "page":
            self._page_break()
        elif self.runs and tag in _BREAKS:
            self._add("\n")
        elif self.runs and tag in _TAB:
            self._add("\t")
        elif self.runs and tag in _HYPHEN:
            self._add("-")

    def end(self, tag: str) -> None:
        if self.skipping:
            self.skipping -= 1
        elif tag in _P:
            if self.open:
                self._emit(self.open.pop())
        elif tag in _T:
            self.in_text = max(0, self.in_text - 1)
        elif tag in _R:
            self.runs = max(0, self.runs - 1)
        elif tag in _P_PR:
            self.in_paragraph_properties = max(0, self.in_paragraph_properties - 1)

    def data(self, data: str) -> None:
        if self.in_text and self.open and not self.skipping:
            self._add(data)

    def _add(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise DocxRefused("too_large", f"the text is over {self.max_chars:,} characters")
        self.open[-1].parts.append(text)

    def _style(self, attrib: dict[str, str]) -> None:
        """The paragraph's style, its first `w:pStyle` (a former style, in `w:pPrChange`, is
        skipped)."""
        paragraph = self.open[-1]
        if paragraph.styled:
            return
        paragraph.styled = True
        style = _attribute(attrib, _VAL) or ""
        heading = _HEADING_STYLE.fullmatch(style)
        if heading:
            paragraph.level = int(heading.group(1))
        elif style.lower() == "title":
            paragraph.level = 1

    def _page_break(self) -> None:
        """The text so far ends its page: the open paragraphs' text so far goes on it, their
        rest on the next page (as a plain paragraph)."""
        for paragraph in self.open:
            self._emit(paragraph)
            paragraph.parts = []
            paragraph.level = None
        self.pages.append([])

    def _emit(self, paragraph: _Paragraph) -> None:
        text = "".join(paragraph.parts)
        if paragraph.level is not None:
            heading = _SPACES.sub(" ", text).strip()
            if heading:
                self.pages[-1].append("#" * min(paragraph.level, _MAX_HASHES) + " " + heading)
            return
        text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
        if text:
            self.pages[-1].append(text)

    def finished(self) -> list[str]:
        return ["\n\n".join(paragraphs) for paragraphs in self.pages]


def _attribute(attrib: dict[str, str], names: frozenset[str]) -> str | None:
    for name in names:
        if name in attrib:
            return attrib[name]
    return None
