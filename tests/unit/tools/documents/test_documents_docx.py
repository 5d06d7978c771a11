"""Reading Word documents (DOCX) with the standard library: paragraphs, headings as Markdown
headings the passage splitter cuts on, tables, the title of the document's properties, explicit
page breaks as pages; and every hostile or damaged file refused with a code before it costs
anything (ZIP bombs, lying headers, DOCTYPEs and entities, too many elements)."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from testkit.docx import PAGE_BREAK, core_xml, document_xml, docx, package, paragraph, table
from tests.support.reading import refused
from tools.documents.docx_text import OLE_SIGNATURE
from tools.documents.passages import passages
from tools.documents.reading import (
    READ_SUFFIXES,
    ReadLimits,
    kind_of,
    read_document,
)

OTTERS = docx(
    paragraph("Otters", "Title")
    + paragraph("Otters live along rivers and coasts.")
    + paragraph("Tools", "Heading1")
    + paragraph("They crack shells on stones.")
    + paragraph("Food", "Heading2")
    + paragraph("Clams, crabs and urchins."),
    title="Otter field notes",
)


def _with_declared_size(data: bytes, name: str, size: int) -> bytes:
    """The archive `data` whose headers (local and central) say that `name` is `size` bytes
    uncompressed, whatever it really holds."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    out = bytearray(data)
    struct.pack_into("<I", out, info.header_offset + 22, size)
    central = out.index(b"PK\x01\x02")  # the first entry of the central directory
    while out[central + 46 : central + 46 + len(name)] != name.encode():
        central = out.index(b"PK\x01\x02", central + 4)
    struct.pack_into("<I", out, central + 24, size)
    return bytes(out)


def test_paragraphs_are_read_with_headings_as_markdown_headings() -> None:
    document = read_document("otters.docx", OTTERS)

    assert (document.kind, document.title) == ("docx", "Otter field notes")
    assert [(page.number, page.text) for page in document.pages] == [
        (
            None,
            "# Otters\n\nOtters live along rivers and coasts.\n\n# Tools\n\n"
            "They crack shells on stones.\n\n## Food\n\nClams, crabs and urchins.",
        )
    ]


def test_the_passage_splitter_cuts_a_docx_on_its_headings() -> None:
    cut = passages(read_document("otters.docx", OTTERS))

    assert [(p.page, p.heading, p.text) for p in cut] == [
        (None, "Otters", "Otters live along rivers and coasts."),
        (None, "Tools", "They crack shells on stones."),
        (None, "Food", "Clams, crabs and urchins."),
    ]


def test_every_heading_level_is_a_markdown_heading_the_splitter_reads() -> None:
    styles = ["Heading1", "Heading3", "Heading6", "Heading9", "heading 2"]
    body = "".join(paragraph(f"Part {n}", style) + paragraph("x") for n, style in enumerate(styles))

    text = read_document("levels.docx", docx(body)).pages[0].text

    assert [line for line in text.split("\n") if line.startswith("#")] == [
        "# Part 0",
        "### Part 1",
        "###### Part 2",
        "###### Part 3",  # the splitter's deepest heading
        "## Part 4",
    ]


def test_a_page_break_starts_page_two_and_passages_name_their_page() -> None:
    body = (
        paragraph("Summary", "Heading1")
        + paragraph("Herons nest in reeds.")
        + PAGE_BREAK
        + paragraph("Cranes fly south in autumn.")
    )

    document = read_document("birds.docx", docx(body))

    assert [(p.number, p.text) for p in document.pages] == [
        (1, "# Summary\n\nHerons nest in reeds."),
        (2, "Cranes fly south in autumn."),
    ]
    assert [(p.page, p.heading, p.text, p.local_id) for p in passages(document)] == [
        (1, "Summary", "Herons nest in reeds.", "p1.1"),
        (2, "Summary", "Cranes fly south in autumn.", "p2.1"),  # the heading carries over
    ]


def test_a_page_break_inside_a_paragraph_cuts_it_between_the_pages() -> None:
    body = (
        '<w:p><w:r><w:t>Before the break.</w:t><w:br w:type="page"/>'
        "<w:t>After the break.</w:t></w:r></w:p>"
    )

    document = read_document("cut.docx", docx(body))

    assert [(p.number, p.text) for p in document.pages] == [
        (1, "Before the break."),
        (2, "After the break."),
    ]


def test_words_own_layout_notes_are_not_page_breaks() -> None:
    body = (
        "<w:p><w:r><w:t>One.</w:t></w:r><w:r><w:lastRenderedPageBreak/><w:t>Two.</w:t></w:r>"
        '<w:r><w:br w:type="column"/><w:t>Three.</w:t></w:r></w:p>'
    )

    assert [(p.number, p.text) for p in read_document("x.docx", docx(body)).pages] == [
        (None, "One.Two.\nThree.")
    ]


def test_the_title_comes_from_the_properties_else_from_the_file_name() -> None:
    assert read_document("a.docx", docx(paragraph("x"), title="  Annual\n report ")).title == (
        "Annual report"
    )
    assert read_document("field notes.docx", docx(paragraph("x"))).title == "field notes"
    assert read_document("blank.docx", docx(paragraph("x"), title="")).title == "blank"


def test_a_tables_cells_are_read_in_order_as_paragraphs() -> None:
    body = paragraph("Counts") + table([["Species", "Count"], ["Otter", "12"], ["Heron", "3"]])

    text = read_document("counts.docx", docx(body)).pages[0].text

    assert text == "Counts\n\nSpecies\n\nCount\n\nOtter\n\n12\n\nHeron\n\n3"


def test_tabs_and_line_breaks_are_kept_within_a_paragraph() -> None:
    body = (
        paragraph("Name:\tOtter\nSeen: 12 May")
        + "<w:p><w:r><w:t>a</w:t><w:cr/><w:t>b</w:t></w:r></w:p>"
    )

    assert read_document("x.docx", docx(body)).pages[0].text == "Name:\tOtter\nSeen: 12 May\n\na\nb"


def test_deleted_text_and_a_text_boxs_second_copy_are_left_out() -> None:
    mc = "http://schemas.openxmlformats.org/markup-compatibility/2006"
    body = (
        "<w:p><w:r><w:t>Kept </w:t></w:r><w:del><w:r><w:delText>gone </w:delText></w:r></w:del>"
        "<w:moveFrom><w:r><w:t>moved away </w:t></w:r></w:moveFrom><w:r><w:t>text.</w:t></w:r>"
        f'<w:r><mc:AlternateContent xmlns:mc="{mc}"><mc:Choice Requires="wps"><w:drawing>'
        "<w:txbxContent><w:p><w:r><w:t>In a box.</w:t></w:r></w:p></w:txbxContent></w:drawing>"
        "</mc:Choice><mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>In a box.</w:t></w:r>"
        "</w:p></w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )

    assert read_document("x.docx", docx(body)).pages[0].text == "In a box.\n\nKept text."


def test_a_former_style_of_a_tracked_change_does_not_make_a_heading() -> None:
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Normal"/><w:pPrChange w:id="1"><w:pPr>'
        '<w:pStyle w:val="Heading1"/></w:pPr></w:pPrChange></w:pPr><w:r><w:t>Plain now.</w:t>'
        "</w:r></w:p>"
    )

    assert read_document("x.docx", docx(body)).pages[0].text == "Plain now."


def test_a_docx_is_known_by_its_name_and_its_bytes() -> None:
    assert ".docx" in READ_SUFFIXES
    assert kind_of("notes.docx", OTTERS) == "docx"
    assert kind_of("NOTES.DOCX", OTTERS) == "docx"
    assert refused("notes.zip", OTTERS) == "unsupported_type"  # other archives stay refused
    assert refused("notes.pdf", OTTERS) == "corrupt"


def test_a_zip_that_is_not_a_word_document_isrefused() -> None:
    sheet = package({"xl/workbook.xml": b"<workbook/>"})

    assert refused("sheet.docx", sheet) == "unsupported_type"


def test_a_damaged_docx_is_refused_as_corrupt() -> None:
    broken_xml = package({"word/document.xml": document_xml(paragraph("x"))[:-20]})
    flipped = bytearray(OTTERS)
    start = zipfile.ZipFile(io.BytesIO(OTTERS)).getinfo("word/document.xml").header_offset + 60
    flipped[start : start + 40] = bytes(40)

    assert refused("cut.docx", OTTERS[: len(OTTERS) // 2]) == "corrupt"
    assert refused("flipped.docx", bytes(flipped)) == "corrupt"
    assert refused("broken.docx", broken_xml) == "corrupt"
    assert refused("text.docx", b"just some text, named .docx") == "corrupt"


def test_a_password_protected_docx_is_refused_as_encrypted() -> None:
    # Office encrypts a DOCX into an OLE compound file holding an `EncryptedPackage` stream.
    sector = bytes(512 - len(OLE_SIGNATURE))
    locked = OLE_SIGNATURE + sector + "EncryptedPackage".encode("utf-16-le") + bytes(600)

    assert refused("locked.docx", locked) == "encrypted"


def test_an_older_word_document_renamed_docx_is_refused_as_unsupported() -> None:
    old = OLE_SIGNATURE + bytes(504) + "WordDocument".encode("utf-16-le") + bytes(600)

    assert refused("old.docx", old) == "unsupported_type"


def test_a_zip_bomb_is_refused_by_its_declared_size_before_it_is_read() -> None:
    bomb = package({"word/document.xml": document_xml(" " * 3_000_000)})  # a few kB zipped

    limits = ReadLimits(max_docx_xml_bytes=1_000_000)

    assert len(bomb) < 20_000
    assert refused("bomb.docx", bomb, limits) == "too_complex"


def test_a_header_that_understates_the_size_is_refused_as_corrupt() -> None:
    real = document_xml(paragraph("x" * 50_000))
    lying = _with_declared_size(package({"word/document.xml": real}), "word/document.xml", 900)

    # zipfile stops at the declared size and finds the checksum wrong.
    assert refused("lying.docx", lying, ReadLimits(max_docx_xml_bytes=1_000)) == "corrupt"


class _Counted(io.BytesIO):
    """A part's bytes as a stream that counts what is read of it."""

    taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        _Counted.taken += len(chunk)
        return chunk


def test_the_reader_never_reads_past_its_cap_even_where_zip_trusts_a_lying_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = document_xml(paragraph("x" * 50_000))
    lying = _with_declared_size(package({"word/document.xml": real}), "word/document.xml", 900)
    # A ZIP reader that gives what the archive really holds, whatever its header says.
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: _Counted(real))

    assert refused("lying.docx", lying, ReadLimits(max_docx_xml_bytes=1_000)) == "too_complex"
    assert _Counted.taken <= 1_001


@pytest.mark.parametrize(
    "xml",
    [
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>",
        b'<!DOCTYPE w:document SYSTEM "file:///etc/passwd"><w:document/>',
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a [<!ENTITY a "b">]><a>&a;</a>'.encode(
            "utf-16"
        ),
    ],
    ids=["entities", "external", "utf-16"],
)
def test_xml_with_a_doctype_or_entities_is_refused_before_it_is_parsed(xml: bytes) -> None:
    assert refused("lol.docx", package({"word/document.xml": xml})) == "too_complex"


def test_properties_with_entities_refuse_the_document() -> None:
    properties = b'<!DOCTYPE p [<!ENTITY t "Title">]><p>&t;</p>'
    data = package(
        {"word/document.xml": document_xml(paragraph("x")), "docProps/core.xml": properties}
    )

    assert refused("x.docx", data) == "too_complex"


def test_a_document_of_too_many_elements_isrefused() -> None:
    body = "<w:p/>" * 2_000

    assert refused("wide.docx", docx(body), ReadLimits(max_docx_elements=1_000)) == "too_complex"
    assert read_document("wide.docx", docx(body + paragraph("x"))).pages[0].text == "x"


def test_a_document_over_the_character_limit_isrefused() -> None:
    data = docx(paragraph("word " * 100))

    assert refused("long.docx", data, ReadLimits(max_chars=200)) == "too_large"


def test_a_document_without_text_is_refused_not_stored_empty() -> None:
    assert refused("empty.docx", docx("")) == "no_text"
    assert refused("blank.docx", docx("<w:p/><w:p><w:r><w:t> </w:t></w:r></w:p>")) == "no_text"
    assert refused("breaks.docx", docx(PAGE_BREAK + PAGE_BREAK), None) == "no_text"


def test_the_title_of_properties_without_one_is_the_file_name() -> None:
    data = package(
        {
            "word/document.xml": document_xml(paragraph("x")),
            "docProps/core.xml": core_xml("").replace(b"<dc:title></dc:title>", b""),
        }
    )

    assert read_document("report.docx", data).title == "report"
