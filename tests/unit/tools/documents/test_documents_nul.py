"""A PDF whose text comes out with NUL characters is read without them: no store keeps NUL in
text (Postgres refuses it), so a document would otherwise be refused whole."""

from __future__ import annotations

from testkit.pdfs import text_pdf
from tools.documents.reading import read_document


def test_nul_characters_of_a_pdfs_text_are_left_out() -> None:
    document = read_document("otters.pdf", text_pdf([["Otters\x00 swim."]]))

    assert document.pages[0].text == "Otters swim."
