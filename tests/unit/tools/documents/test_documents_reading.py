"""Reading a user's files: PDFs page by page, HTML, Markdown and text (DOCX has its own file,
test_documents_docx.py); every bad file refused with a code and a sentence, and nothing
half-read."""

from __future__ import annotations

import io
import zipfile

import pytest
from pypdf import PdfReader, PdfWriter

from testkit.pdfs import text_pdf
from tests.support.reading import refused
from tools.documents.reading import DocumentRefused, ReadLimits, clean_name, read_document

OTTERS = text_pdf(
    [["Otters use stones as tools.", "They crack shells on them."], ["Page two text."]],
    title="Otter tools",
)


def test_a_pdf_is_read_page_by_page_with_its_title_and_hash() -> None:
    document = read_document("otters.pdf", OTTERS)

    assert (document.kind, document.title) == ("pdf", "Otter tools")
    assert [(p.number, p.text) for p in document.pages] == [
        (1, "Otters use stones as tools.\nThey crack shells on them."),
        (2, "Page two text."),
    ]
    assert document.sha256 == read_document("copy.pdf", OTTERS).sha256


def test_a_pdf_without_a_title_is_named_by_its_file() -> None:
    assert read_document("field notes.pdf", text_pdf([["x y z"]])).title == "field notes"


def test_a_pdf_named_otherwise_is_still_read_as_a_pdf() -> None:
    assert read_document("notes.txt", OTTERS).kind == "pdf"


def test_a_scan_without_a_text_layer_is_refused_not_indexed_empty() -> None:
    assert refused("scan.pdf", text_pdf([[], []])) == "no_text"


def test_an_encrypted_pdf_isrefused() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(OTTERS)))
    writer.encrypt("secret")
    locked = io.BytesIO()
    writer.write(locked)

    assert refused("locked.pdf", locked.getvalue()) == "encrypted"


def test_a_damaged_pdf_isrefused() -> None:
    assert refused("cut.pdf", OTTERS[:200]) in ("corrupt", "no_text")
    assert refused("junk.pdf", b"%PDF-1.4\n" + b"\xff" * 500) in ("corrupt", "no_text")


def test_a_pdf_over_the_page_limit_isrefused() -> None:
    many = text_pdf([["page"]] * 12)

    assert refused("long.pdf", many, ReadLimits(max_pages=10)) == "too_many_pages"


def test_a_zip_named_pdf_isrefused() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("a.txt", "hello")

    assert refused("report.pdf", archive.getvalue()) == "corrupt"
    assert refused("report.docx", archive.getvalue()) == "unsupported_type"


def test_empty_oversized_and_unknown_files_arerefused() -> None:
    assert refused("a.txt", b"") == "empty"
    assert refused("a.txt", b"   \n") == "empty"
    assert refused("a.txt", b"x" * 101, ReadLimits(max_bytes=100)) == "too_large"
    assert refused("a.exe", b"MZ\x90\x00\x03") == "unsupported_type"
    assert refused("picture.png", b"plain looking text") == "unsupported_type"


@pytest.mark.parametrize(
    "name", ["../etc/passwd", "a/b.txt", "a\\b.txt", "bell\x07.txt", "", "x" * 300, ".."]
)
def test_a_name_with_a_path_or_control_characters_isrefused(name: str) -> None:
    with pytest.raises(DocumentRefused) as caught:
        clean_name(name)
    assert caught.value.code == "bad_name"


def test_markdown_and_text_are_one_page_without_a_number() -> None:
    document = read_document("notes.md", b"# Otters\n\nThey use stones.")

    assert (document.kind, document.title) == ("markdown", "notes")
    assert [(p.number, p.text) for p in document.pages] == [(None, "# Otters\n\nThey use stones.")]
    assert read_document("notes.txt", "caf\xe9".encode("latin-1")).pages[0].text == "café"


def test_html_keeps_the_visible_text_and_its_headings() -> None:
    page = (
        b"<!doctype html><html><head><title>Otters</title><style>p{}</style></head><body>"
        b"<script>alert('x')</script><h2>Tools</h2><p>They use <b>stones</b>.</p>"
        b"<ul><li>shells</li><li>clams</li></ul></body></html>"
    )

    document = read_document("page.html", page)

    assert (document.kind, document.title) == ("html", "Otters")
    assert document.pages[0].text == "## Tools\n\nThey use stones.\n\nshells\n\nclams"


def test_an_html_bomb_isrefused() -> None:
    bomb = b"<html><body>" + b"<div>" * 600 + b"x" + b"</div>" * 600 + b"</body></html>"
    flat = b"<html><body>" + b"<span></span>" * 2_000 + b"</body></html>"

    assert refused("deep.html", bomb) == "too_complex"
    assert refused("wide.html", flat, ReadLimits(max_html_elements=1_000)) == "too_complex"
