"""The `documents` tool: passages recorded as evidence at an address that names the
collection, the document and the page, cited by title and page; what it does as every passage
tool does is tests/unit/tools/test_tools_passage_tools.py."""

from __future__ import annotations

from tools.documents.search_tool import (
    DocumentPlace,
    cited_title,
    document_place,
    document_url,
)


def test_a_document_address_names_its_collection_document_and_page() -> None:
    paged = DocumentPlace("c1", "d1", 12)
    unpaged = DocumentPlace("c1", "d2", None)

    assert document_url(paged) == "/collections/c1/documents/d1#page=12"
    assert document_url(unpaged) == "/collections/c1/documents/d2"
    assert document_place(document_url(paged)) == paged
    assert document_place(document_url(unpaged)) == unpaged
    assert document_place("https://example.com/collections/c1/documents/d1") is None
    assert document_place("/collections/c1/documents/d1/../x") is None


def test_a_citation_shows_the_title_and_the_page() -> None:
    assert cited_title("Annual report", 12) == "Annual report, p. 12"
    assert cited_title("Notes", None) == "Notes"
