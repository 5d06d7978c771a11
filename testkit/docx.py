"""Small real DOCX files for tests, built in memory with `zipfile`: the parts Word itself needs
(`[Content_Types].xml`, the package's relationships, `word/document.xml`) and, when a title is
given, the document's properties (`docProps/core.xml`)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from xml.sax.saxutils import escape

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
PAGE_BREAK = '<w:p><w:r><w:br w:type="page"/></w:r></w:p>'
"""A paragraph holding only a page break (what Ctrl+Enter writes)."""

CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" ContentType="application/'
    b'vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    b'<Override PartName="/docProps/core.xml" ContentType="application/'
    b'vnd.openxmlformats-package.core-properties+xml"/>'
    b"</Types>"
)
RELATIONSHIPS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" Target="word/document.xml" Type="http://schemas.openxmlformats.org/'
    b'officeDocument/2006/relationships/officeDocument"/>'
    b'<Relationship Id="rId2" Target="docProps/core.xml" Type="http://schemas.openxmlformats.org/'
    b'package/2006/relationships/metadata/core-properties"/>'
    b"</Relationships>"
)


def paragraph(text: str, style: str | None = None) -> str:
    """A `w:p` of one run holding `text` (its tabs as `w:tab`, its line breaks as `w:br`), with
    the paragraph style `style` when given (`Heading1`, `Title`, ...)."""
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    pieces: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if number:
            pieces.append("<w:br/>")
        for index, part in enumerate(line.split("\t")):
            if index:
                pieces.append("<w:tab/>")
            if part:
                pieces.append(f'<w:t xml:space="preserve">{escape(part)}</w:t>')
    return f"<w:p>{properties}<w:r>{''.join(pieces)}</w:r></w:p>"


def table(rows: list[list[str]]) -> str:
    """A `w:tbl` whose cells each hold one paragraph."""
    cells = ("".join(f"<w:tc>{paragraph(cell)}</w:tc>" for cell in row) for row in rows)
    return f"<w:tbl>{''.join(f'<w:tr>{row}</w:tr>' for row in cells)}</w:tbl>"


def document_xml(body: str) -> bytes:
    """`word/document.xml` whose body holds `body` (paragraphs, tables, ...)."""
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W_NS}"><w:body>{body}<w:sectPr/></w:body></w:document>'
    ).encode()


def core_xml(title: str) -> bytes:
    """`docProps/core.xml` holding `title`."""
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{escape(title)}</dc:title><dc:creator>Tester</dc:creator>"
        "</cp:coreProperties>"
    ).encode()


def package(parts: Mapping[str, bytes]) -> bytes:
    """A ZIP of the content types, the package's relationships and `parts` (name: bytes),
    compressed as Word compresses them."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", RELATIONSHIPS)
        for name, data in parts.items():
            archive.writestr(name, data)
    return out.getvalue()


def docx(body: str, title: str | None = None) -> bytes:
    """A DOCX whose body holds `body`, with `title` in its properties when given."""
    parts = {"word/document.xml": document_xml(body)}
    if title is not None:
        parts["docProps/core.xml"] = core_xml(title)
    return package(parts)
