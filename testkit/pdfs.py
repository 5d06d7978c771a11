"""Small real PDFs for tests: pages of text in Helvetica, written byte by byte (objects, a
cross-reference table and a trailer), so a reader extracts exactly the lines given."""

from __future__ import annotations

from collections.abc import Sequence


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: Sequence[str]) -> bytes:
    """A page's content stream: each line shown at its own place, top to bottom."""
    parts = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
    for line in lines:
        parts.append(f"({_escaped(line)}) Tj T*")
    parts.append("ET")
    return "\n".join(parts).encode("latin-1")


def text_pdf(pages: Sequence[Sequence[str]], title: str = "") -> bytes:
    """A PDF whose page k shows the lines `pages[k]` (an empty list: a page without text, as a
    scan's is), with `title` in its metadata when given."""
    objects: list[bytes] = []
    count = len(pages)
    # 1 catalog, 2 pages, 3 font, 4 info, then a page and its content per page.
    kids = " ".join(f"{5 + 2 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Title ({_escaped(title)}) >>".encode("latin-1"))
    for i, lines in enumerate(pages):
        content = _content(lines)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {6 + 2 * i} 0 R >>".encode()
        )
        objects.append(
            f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n")
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    start = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    info = " /Info 4 0 R" if title else ""
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{start}\n%%EOF\n"
    ).encode()
    return bytes(out)
