"""The page links a source to its document's card only when its URL is exactly the address the
`documents` tool cites (app/static/js/docview.js: DOCUMENT_URL against
tools/documents/search_tool.py: document_url); any other relative URL stays text."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from tools.documents.search_tool import DocumentPlace, document_url

DOCVIEW_JS = Path(__file__).resolve().parents[2] / "app" / "static" / "js" / "docview.js"


def page_pattern() -> re.Pattern[str]:
    """The page's regular expression, read from its source (its syntax is also Python's)."""
    found = re.search(r"DOCUMENT_URL =\s*/(.+)/;", DOCVIEW_JS.read_text())
    assert found is not None
    return re.compile(found.group(1))


@pytest.mark.parametrize("page", [1, 12, 10_000, None])
def test_the_page_links_every_address_the_documents_tool_cites(page: int | None) -> None:
    place = DocumentPlace(uuid.uuid4().hex, uuid.uuid4().hex, page)

    assert page_pattern().fullmatch(document_url(place))


@pytest.mark.parametrize(
    "url",
    [
        "//elsewhere.example/collections/c1/documents/d1",
        "/collections/../documents/d1",
        "/collections/c1/documents/d1/../../runs",
        "/collections/c1/documents/d1?download=1",
        "/collections/c1/documents/d1#page=2x",
        "/collections/c1/documents/d1#page=0",
        "/collections/c1/documents/d1#other",
        "/collections/c1/documents/",
        "/collections/c%2F1/documents/d1",
        "/runs/r1",
        "javascript:alert(1)//collections/c1/documents/d1",
        "https://example.org/collections/c1/documents/d1",
        "/collections/c1/documents/d1\n",
    ],
)
def test_any_other_relative_or_odd_address_is_not_a_document_link(url: str) -> None:
    assert page_pattern().fullmatch(url) is None
